"""On-call alerts for `pulse oncall alerts`, and their timelines for the API: each alert with its
timeline, each page with how its delivery went."""

from __future__ import annotations

from typing import Any

from peewee import JOIN

from pulse.models import AlertSource, Component, Notification, OnCallAlert, OnCallTimeline, Organization, Person
from pulse.models.alert import RESOLVED


def alerts(*, everything: bool = False, limit: int = 50) -> list[dict[str, Any]]:
    """The newest ``limit`` alerts not resolved (or, with ``everything``, of any status), newest
    first, each with its timeline; a "paged" step carries its delivery's status and error."""
    query = (
        OnCallAlert.select(OnCallAlert, Organization.slug, Component.key, AlertSource.key)
        .join(Organization)
        .switch(OnCallAlert)
        .join(Component, JOIN.LEFT_OUTER)
        .switch(OnCallAlert)
        .join(AlertSource, JOIN.LEFT_OUTER)
        .order_by(OnCallAlert.id.desc())
        .limit(limit)
    )
    if not everything:
        query = query.where(OnCallAlert.status != RESOLVED)
    found = list(query)
    steps = timelines(found)
    return [
        {
            "id": a.id,
            "organization": a.organization.slug,
            "component": a.component.key if a.component is not None else None,
            "incident": a.incident_id,
            "source": a.source.key if a.source is not None else None,
            "dedup_key": a.dedup_key,
            "title": a.title,
            "status": a.status,
            "policy": a.policy["key"],
            "level": a.level,
            "round": a.round,
            "next_escalation_at": a.next_escalation_at and a.next_escalation_at.isoformat(),
            "acknowledged_by": a.acknowledged_by,
            "acknowledged_via": a.acknowledged_via,
            "acknowledged_at": a.acknowledged_at and a.acknowledged_at.isoformat(),
            "resolved_at": a.resolved_at and a.resolved_at.isoformat(),
            "created_at": a.created_at.isoformat(),
            "timeline": steps.get(a.id, []),
        }
        for a in found
    ]


def timelines(found: list[OnCallAlert]) -> dict[int, list[dict[str, Any]]]:
    """The timeline of each alert of ``found``, by its id, oldest step first; a "paged" step
    carries its delivery's status and error."""
    steps: dict[int, list[dict[str, Any]]] = {}
    deliveries = _deliveries([a.event_id for a in found])
    events = {a.id: a.event_id for a in found}
    for step in (
        OnCallTimeline.select()
        .where(OnCallTimeline.alert.in_([a.id for a in found] or [0]))
        .order_by(OnCallTimeline.id)
    ):
        page = deliveries.get((events[step.alert_id], step.level, step.round, step.person, step.channel))
        steps.setdefault(step.alert_id, []).append(_step(step, page))
    return steps


def _deliveries(event_ids: list[int]) -> dict[tuple[Any, ...], Notification]:
    """The pages of these alerts' events, by (event, level, round, person key, channel)."""
    pages = Notification.select(Notification, Person.key).join(Person).where(Notification.event.in_(event_ids or [0]))
    found = {}
    for page in pages:
        level, round_, _ = page.key.split(".", 2)
        assert page.person is not None  # the inner join
        found[page.event_id, int(level), int(round_), page.person.key, page.kind] = page
    return found


def _step(step: OnCallTimeline, page: Notification | None) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "at": step.at.isoformat(),
        "kind": step.kind,
        "level": step.level,
        "round": step.round,
        "person": step.person,
        "channel": step.channel,
        "note": step.note,
    }
    if step.kind == "paged":
        shown["delivery"] = page.status if page else "unknown"
        shown["error"] = page.last_error if page else None
    return shown
