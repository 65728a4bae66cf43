"""``GET /api/v1/alerts`` and ``GET /api/v1/alerts/{id}``: the token's organization's on-call
alerts (scope ``read``), newest first a page at a time (`pulse.api.pages`), filtered by ``status``,
``source`` (an alert source's key) and ``since`` (opened then or later); one alert with its
timeline (`pulse.oncall.queries.timelines`): each page sent (to whom, on which channel, how its
delivery went), escalation, acknowledgement (by whom, via what) and resolution.

A person is named by key and name only: a page's destination and its delivery's error (a
vendor's text, which may quote a phone number or an address) are never shown, nor an alert
source's token.
"""

from __future__ import annotations

from typing import Any

from peewee import JOIN

from pulse.api import pages, params
from pulse.api.auth import Call, error
from pulse.models import AlertSource, Component, OnCallAlert
from pulse.models.alert import ACKNOWLEDGED, EXHAUSTED, RESOLVED, TRIGGERED
from pulse.oncall.queries import timelines

STATUSES = (TRIGGERED, ACKNOWLEDGED, EXHAUSTED, RESOLVED)


def index(call: Call) -> dict[str, Any]:
    limit = pages.limit(call.query)
    query = listed().where(OnCallAlert.organization == call.organization_id)
    status = params.one_of(call.query, "status", STATUSES)
    if status is not None:
        query = query.where(OnCallAlert.status == status)
    source = params.key(call.query, "source")
    if source is not None:
        query = query.where(AlertSource.key == source)
    since = params.instant(call.query, "since")
    if since is not None:
        query = query.where(OnCallAlert.created_at >= since)
    before = pages.after_number(call.query)
    if before is not None:
        query = query.where(OnCallAlert.id < before)
    rows, next_cursor = pages.take(query, OnCallAlert.id.desc(), limit, "id")
    return {"alerts": [shown(r) for r in rows], "next_cursor": next_cursor}


def one(call: Call) -> dict[str, Any]:
    text = call.params["id"]
    number = params.row_id(text)
    row = None
    if number is not None:
        row = listed().where(OnCallAlert.organization == call.organization_id, OnCallAlert.id == number).first()
    if row is None:
        raise error(404, f"no alert {text[:100]!r}")
    return detail(row)


def detail(row: OnCallAlert) -> dict[str, Any]:
    """An alert as ``GET /api/v1/alerts/{id}`` shows it: with its timeline."""
    steps = timelines([row]).get(row.id, [])
    return {**shown(row), "timeline": [{k: v for k, v in step.items() if k != "error"} for step in steps]}


def shown(row: OnCallAlert) -> dict[str, Any]:
    acknowledged = None
    if row.acknowledged_at is not None:
        acknowledged = {"by": row.acknowledged_by, "via": row.acknowledged_via, "at": row.acknowledged_at.isoformat()}
    return {
        "id": row.id,
        "title": row.title,
        "status": row.status,
        "level": row.level,
        "round": row.round,
        "policy": row.policy["key"],
        "component": row.component.key if row.component is not None else None,
        "incident": row.incident_id,
        "source": row.source.key if row.source is not None else None,
        "dedup_key": row.dedup_key,
        "next_escalation_at": row.next_escalation_at and row.next_escalation_at.isoformat(),
        "acknowledged": acknowledged,
        "resolved_at": row.resolved_at and row.resolved_at.isoformat(),
        "created_at": row.created_at.isoformat(),
    }


def listed() -> Any:
    """Alerts with their component's key and their source's, in one query."""
    return (
        OnCallAlert.select(OnCallAlert, Component.key, AlertSource.key)
        .join(Component, JOIN.LEFT_OUTER)
        .switch(OnCallAlert)
        .join(AlertSource, JOIN.LEFT_OUTER)
    )
