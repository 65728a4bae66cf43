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

from typing import Any, NotRequired

from peewee import JOIN
from typing_extensions import TypedDict

from pulse.api import pages, params
from pulse.api.auth import Call, error
from pulse.api.declared import Operation
from pulse.models import AlertSource, Component, OnCallAlert
from pulse.models.alert import ACKNOWLEDGED, EXHAUSTED, RESOLVED, TRIGGERED
from pulse.oncall.queries import timelines

STATUSES = (TRIGGERED, ACKNOWLEDGED, EXHAUSTED, RESOLVED)
FILTERS = (
    params.OneOf("status", "Only the alerts in this status.", allowed=STATUSES),
    params.Key("source", "Only the alerts of this alert source (its key)."),
    params.Instant("since", "Only the alerts opened then or later."),
)
STATUS, SOURCE, SINCE = FILTERS


class Acknowledged(TypedDict):
    by: str | None
    via: str | None
    at: str


class AlertView(TypedDict):
    id: int
    title: str
    status: str
    level: int
    round: int
    policy: str
    component: str | None
    incident: int | None
    source: str | None
    dedup_key: str | None
    next_escalation_at: str | None
    acknowledged: Acknowledged | None
    resolved_at: str | None
    created_at: str


class Step(TypedDict):
    at: str
    kind: str
    level: int | None
    round: int | None
    person: str | None
    channel: str | None
    note: str
    delivery: NotRequired[str]  # a page's: pending, sending, sent, failed, cancelled (unknown: none found)


class AlertDetail(AlertView):
    timeline: list[Step]


class AlertPage(TypedDict):
    alerts: list[AlertView]
    next_cursor: str | None


def index(call: Call) -> AlertPage:
    limit = pages.limit(call.query)
    query = listed().where(OnCallAlert.organization == call.organization_id)
    status = STATUS.read(call.query)
    if status is not None:
        query = query.where(OnCallAlert.status == status)
    source = SOURCE.read(call.query)
    if source is not None:
        query = query.where(AlertSource.key == source)
    since = SINCE.read(call.query)
    if since is not None:
        query = query.where(OnCallAlert.created_at >= since)
    before = pages.after_number(call.query)
    if before is not None:
        query = query.where(OnCallAlert.id < before)
    rows, next_cursor = pages.take(query, OnCallAlert.id.desc(), limit, "id")
    return {"alerts": [shown(r) for r in rows], "next_cursor": next_cursor}


def one(call: Call) -> AlertDetail:
    text = call.params["id"]
    number = params.row_id(text)
    row = None
    if number is not None:
        row = listed().where(OnCallAlert.organization == call.organization_id, OnCallAlert.id == number).first()
    if row is None:
        raise error(404, f"no alert {text[:100]!r}")
    return detail(row)


def detail(row: OnCallAlert) -> AlertDetail:
    """An alert as ``GET /api/v1/alerts/{id}`` shows it: with its timeline (a page's delivery, not
    its error, which may quote a phone number)."""
    return {**shown(row), "timeline": [_step(step) for step in timelines([row]).get(row.id, [])]}


def _step(step: dict[str, Any]) -> Step:
    answer = Step(
        at=step["at"],
        kind=step["kind"],
        level=step["level"],
        round=step["round"],
        person=step["person"],
        channel=step["channel"],
        note=step["note"],
    )
    if "delivery" in step:
        answer["delivery"] = step["delivery"]
    return answer


def shown(row: OnCallAlert) -> AlertView:
    acknowledged: Acknowledged | None = None
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


EXAMPLE: AlertView = {
    "id": 4,
    "title": "Public API is down",
    "status": "acknowledged",
    "level": 1,
    "round": 1,
    "policy": "default",
    "component": "api",
    "incident": 17,
    "source": None,
    "dedup_key": None,
    "next_escalation_at": None,
    "acknowledged": {"by": "carol", "via": "sms", "at": "2026-12-07T14:44:10+00:00"},
    "resolved_at": None,
    "created_at": "2026-12-07T14:41:31+00:00",
}
DETAIL: AlertDetail = {
    **EXAMPLE,
    "timeline": [
        {
            "at": "2026-12-07T14:41:31+00:00",
            "kind": "paged",
            "level": 1,
            "round": 1,
            "person": "carol",
            "channel": "sms",
            "note": "Carol by sms",
            "delivery": "sent",
        },
        {
            "at": "2026-12-07T14:44:10+00:00",
            "kind": "acknowledged",
            "level": None,
            "round": None,
            "person": "carol",
            "channel": None,
            "note": "by carol (sms)",
        },
    ],
}
INDEX = Operation(
    "List the on-call alerts, newest first",
    AlertPage,
    query=(*pages.QUERY, *FILTERS),
    refusals=(400,),
    example={"alerts": [EXAMPLE], "next_cursor": "NA"},
)
ONE = Operation("An on-call alert, with its timeline", AlertDetail, refusals=(404,), example=DETAIL)
