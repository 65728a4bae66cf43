"""On-call alerts, from an incident to the acknowledgement: who is paged, when the next level is
due, and every step on the alert's timeline.

- `open_alert`: an incident of a component with an escalation policy gets one alert (unique per
  incident) with the policy frozen as it is now, and level 1 is paged at once. `open_keyed` does
  the same for an alert an alert source sent in (`pulse.sources`), keyed by its ``dedup_key``.
- Paging a level makes one notification per person and contact channel (key: level, round,
  person, channel, under the alert's page event, whose audience is ``addressed``: no broadcast),
  each carrying the person's acknowledgement link (`pulse.oncall.tokens`, when the settings give
  its endpoint and key), delivered by the notifications worker with its exactly-once, pacing and
  retry rules. A level with no one to page (an empty schedule) falls
  through to the next at once and says so on the timeline.
- `escalate`: when a level's wait ends unacknowledged, the next level is paged; after the last
  level the policy starts again from level 1, ``repeat`` more times; then the alert is exhausted
  (it stays open, an event tells the organization's channels). It moves the alert only from the
  level and round it expects (a guarded update), so a message sent twice pages once.
  `escalate_all` does it for the alerts due together, in one transaction with a few statements.
- `acknowledge` and `resolve` stop the escalation and cancel the pages not sent yet (those being
  sent go on); doing either twice, or late, changes nothing and says so.

Every function takes ``now`` (the tests travel in time) and runs in one transaction. Those that
page take the ``settings`` that make acknowledgement links (None: pages carry none) and return an
`Outcome`: the notifications to send and the events to publish, after the commit.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from peewee import Tuple

from pulse import events
from pulse.config import Settings
from pulse.db import db
from pulse.models import AlertSource, EscalationPolicy, Event, Notification, OnCallAlert, OnCallTimeline, Person
from pulse.models.alert import ACKNOWLEDGED, EXHAUSTED, RESOLVED, TRIGGERED
from pulse.models.event import ADDRESSED, CHANNELS_ONLY, ONCALL_EXHAUSTED, ONCALL_PAGE
from pulse.models.notification import CANCELLED, PENDING
from pulse.oncall import paging, replies, tokens
from pulse.spec import show_duration

logger = logging.getLogger(__name__)

_INCIDENT = """
    SELECT i.organization_id, i.component_id, i.title, i.impact, i.started_at, i.resolved_at,
           c.key, c.name, p.key, p.name, p.levels, p.repeat, p.contact, p.ack_reminder_seconds
      FROM incident i
      JOIN component c ON c.id = i.component_id
      JOIN escalation_policy p ON p.id = c.escalation_policy_id
     WHERE i.id = %s
       FOR NO KEY UPDATE OF i
"""


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What to send once the transaction has committed."""

    notifications: list[int] = dataclasses.field(default_factory=list)
    events: list[int] = dataclasses.field(default_factory=list)


def open_alert(incident_id: int, now: datetime, settings: Settings | None = None) -> Outcome:
    """Open the incident's alert and page level 1, once: for an incident whose alert is open
    already (a message delivered twice), the pages not sent yet are returned to send again. An
    incident without an escalation policy, or resolved already, pages no one."""
    with db.atomic():
        # The incident row's lock makes two messages for one incident take turns.
        row = db.execute_sql(_INCIDENT, (incident_id,)).fetchone()
        if row is None:
            return Outcome()
        organization_id, component_id, title, impact, started_at, resolved_at, component_key, component = row[:8]
        policy_key, policy_name, levels, repeat, contact, ack_reminder_seconds = row[8:]
        existing = OnCallAlert.get_or_none(OnCallAlert.incident == incident_id)
        if existing is not None:
            return Outcome(notifications=_unsent(existing))
        if resolved_at is not None:
            logger.info("Incident %s is resolved already: no one is paged.", incident_id)
            return Outcome()
        payload = {
            "incident": {"id": incident_id, "title": title, "impact": impact, "started_at": started_at.isoformat()},
            "component": {"key": component_key, "name": component},
        }
        policy = {"key": policy_key, "name": policy_name, "levels": levels, "repeat": repeat, "contact": contact,
                  "ack_reminder_seconds": ack_reminder_seconds}  # fmt: skip
        origin = {"incident": incident_id, "component": component_id}
        return _open(organization_id, origin, title, f"{title} ({component})", payload, policy, now, settings)


def open_keyed(
    source: AlertSource,
    dedup_key: str,
    title: str,
    payload: dict[str, Any],
    policy: dict[str, Any],
    now: datetime,
    settings: Settings | None = None,
) -> Outcome:
    """Open the alert of ``source`` keyed ``dedup_key`` and page level 1 of ``policy`` (frozen, as
    `frozen_policy` gives it), in the caller's transaction, which holds the source's lock: the
    caller made sure no alert of this key is open (a unique index would refuse a second)."""
    payload = {**payload, "source": {"key": source.key, "name": source.name}}
    origin = {"source": source.id, "dedup_key": dedup_key}
    return _open(source.organization_id, origin, title, f"{title} (from {source.name})", payload, policy, now, settings)


def frozen_policy(organization_id: int, key: str) -> dict[str, Any] | None:
    """The organization's escalation policy ``key`` as an alert freezes it, or None."""
    policy = EscalationPolicy.get_or_none(EscalationPolicy.organization == organization_id, EscalationPolicy.key == key)
    if policy is None:
        return None
    fields = ("key", "name", "levels", "repeat", "contact", "ack_reminder_seconds")
    return {field: getattr(policy, field) for field in fields}


def _open(
    organization_id: int,
    origin: dict[str, Any],
    title: str,
    opened: str,
    payload: dict[str, Any],
    policy: dict[str, Any],
    now: datetime,
    settings: Settings | None,
) -> Outcome:
    """Write the alert (``origin``: its incident and component, or its source and key) with its
    page event, say ``opened`` on its timeline and page level 1."""
    event_id = Event.insert(
        organization=organization_id,
        component=origin.get("component"),
        incident=origin.get("incident"),
        type=ONCALL_PAGE,
        payload=payload,
        audience=ADDRESSED,  # its notifications are the pages
        created_at=now,
        sent_at=now,  # never broadcast
    ).execute()
    alert_id = OnCallAlert.insert(
        organization=organization_id,
        event=event_id,
        policy=policy,
        title=title[:1024],
        next_escalation_at=now,  # paged just below
        created_at=now,
        updated_at=now,
        **origin,
    ).execute()
    Event.update(payload={**payload, "alert": alert_id}).where(Event.id == event_id).execute()
    alert = OnCallAlert.get_by_id(alert_id)
    steps = [_step(alert, now, "opened", f"{opened}; escalation policy {policy['name']}")]
    return _page(alert, 1, 1, now, steps, settings)


def escalate(alert_id: int, level: int, round_: int, now: datetime, settings: Settings | None = None) -> Outcome:
    """Page the level after ``level`` of round ``round_``, if the alert is still triggered there."""
    return escalate_all([(alert_id, level, round_)], now, settings)


def escalate_all(expected: Sequence[tuple[int, int, int]], now: datetime, settings: Settings | None = None) -> Outcome:
    """`escalate` each (alert id, level, round) of ``expected`` still triggered there (the others
    were acknowledged, resolved, or moved on by another copy of their message), in one
    transaction: their pages in one statement, their moves and their timelines in a few."""
    if not expected:
        return Outcome()
    with db.atomic():
        found = (
            OnCallAlert.select()
            .where(
                Tuple(OnCallAlert.id, OnCallAlert.level, OnCallAlert.round).in_([tuple(key) for key in expected]),
                OnCallAlert.status == TRIGGERED,
            )
            .order_by(OnCallAlert.id)  # locked in one order: two batches never wait for each other in a circle
            .for_update("FOR NO KEY UPDATE")  # type: ignore[arg-type]
        )
        targets = _Targets()
        plans = []
        for alert in found:
            wait = timedelta(seconds=alert.policy["levels"][alert.level - 1]["wait_seconds"])
            note = f"no acknowledgement within {show_duration(wait)}"
            steps = [_step(alert, now, "escalated", note, level=alert.level, round_=alert.round)]
            plans.append(_plan(alert, *_after(alert.policy, alert.level, alert.round), now, steps, settings, targets))
        return _carry_out(plans, now, settings)


def acknowledge(alert_id: int, person: str | None, via: str, now: datetime) -> tuple[bool, str]:
    """Acknowledge the alert (``person``: a person key of its organization, or None for an
    operator), stopping its escalation. Returns whether it changed and what happened, in words.
    Raises LookupError for an alert or a person that does not exist."""
    with db.atomic():
        alert = _alert(alert_id)
        if (
            person is not None
            and not Person.select().where(Person.organization == alert.organization_id, Person.key == person).exists()
        ):
            raise LookupError(f"no person {person!r} in the alert's organization")
        changed = (
            OnCallAlert.update(
                status=ACKNOWLEDGED,
                acknowledged_by=person,
                acknowledged_via=via,
                acknowledged_at=now,
                next_escalation_at=None,
                updated_at=now,
            )
            .where(OnCallAlert.id == alert_id, OnCallAlert.status.in_([TRIGGERED, EXHAUSTED]))
            .execute()
        )
        if not changed:
            return False, _already(_alert(alert_id))
        who = person or "an operator"
        note = f"by {who} ({via})" + _cancelled(alert, "acknowledged")
        _write([_step(alert, now, "acknowledged", note, person=person)])
        return True, f"alert {alert_id} acknowledged by {who}: no one more is paged"


def resolve(alert_id: int, note: str, now: datetime) -> tuple[bool, str]:
    """Resolve the alert, stopping its escalation; ``note`` says why. Returns whether it changed
    and what happened. Raises LookupError for an alert that does not exist."""
    with db.atomic():
        alert = _alert(alert_id)
        changed = (
            OnCallAlert.update(status=RESOLVED, resolved_at=now, next_escalation_at=None, updated_at=now)
            .where(OnCallAlert.id == alert_id, OnCallAlert.status != RESOLVED)
            .execute()
        )
        if not changed:
            return False, _already(_alert(alert_id))
        _write([_step(alert, now, "resolved", note + _cancelled(alert, "resolved"))])
        return True, f"alert {alert_id} resolved: no one more is paged"


def resolve_incident(incident_id: int, now: datetime) -> bool:
    """Resolve the alert of a resolved incident, if it has one still open."""
    alert = OnCallAlert.get_or_none(OnCallAlert.incident == incident_id)
    return alert is not None and resolve(alert.id, "the incident was resolved", now)[0]


def note(alert_id: int, now: datetime, kind: str, text: str) -> None:
    """Write a step of ``kind`` on the alert's timeline, saying ``text``."""
    OnCallTimeline.insert(alert=alert_id, at=now, kind=kind, note=text).execute()


def _page(
    alert: OnCallAlert, level: int, round_: int, now: datetime, steps: list[dict[str, Any]], settings: Settings | None
) -> Outcome:
    """Page ``level`` of round ``round_`` (or the first level after it that has anyone to page),
    move the alert there and write ``steps`` and the new ones on its timeline."""
    return _carry_out([_plan(alert, level, round_, now, steps, settings, _Targets())], now, settings)


@dataclasses.dataclass
class _Plan:
    """What paging an alert writes: its pages (none: it is exhausted), where it moves, its steps."""

    alert: OnCallAlert
    level: int
    round: int
    pages: list[paging.Page]
    links: list[str | None]
    steps: list[dict[str, Any]]


class _Targets:
    """`paging.targets` of one instant, read once for the alerts of a batch that page the same level."""

    def __init__(self) -> None:
        self.found: dict[str, tuple[list[paging.Page], list[str]]] = {}

    def __call__(
        self, organization_id: int, level: dict[str, Any], contact: list[str], at: datetime
    ) -> tuple[list[paging.Page], list[str]]:
        key = json.dumps([organization_id, level["targets"], contact, at.isoformat()], sort_keys=True)
        if key not in self.found:
            self.found[key] = paging.targets(organization_id, level, contact, at)
        pages, notes = self.found[key]
        return pages, list(notes)


def _plan(
    alert: OnCallAlert,
    level: int,
    round_: int,
    now: datetime,
    steps: list[dict[str, Any]],
    settings: Settings | None,
    targets: _Targets,
) -> _Plan:
    """The first level from ``level`` of round ``round_`` that has anyone to page, with ``steps``
    and the new ones; or, when none has, the last level with no pages (exhausted)."""
    policy = alert.policy
    levels, rounds = policy["levels"], policy["repeat"] + 1
    while round_ <= rounds:
        pages, notes = targets(alert.organization_id, levels[level - 1], policy["contact"], now)
        steps += [_step(alert, now, "skipped", note, level=level, round_=round_) for note in notes]
        if pages:
            steps += [
                _step(alert, now, "paged", f"{p.name} by {c}", level=level, round_=round_, person=p.person, channel=c)
                for p in pages
                for c in p.channels
            ]
            return _Plan(alert, level, round_, pages, _links(alert, pages, now, settings), steps)
        steps.append(_step(alert, now, "skipped", "no one to page: on to the next level", level=level, round_=round_))
        level, round_ = _after(policy, level, round_)
    rounds_text = f"{rounds} round{'s' if rounds > 1 else ''}"
    steps.append(_step(alert, now, "exhausted", f"no one acknowledged after {rounds_text} of the policy"))
    return _Plan(alert, len(levels), rounds, [], [], steps)


def _carry_out(plans: list[_Plan], now: datetime, settings: Settings | None) -> Outcome:
    """Write the plans' pages (in one statement), move their alerts (one statement for those
    moving alike) and write their steps (in one statement); tell each exhausted alert's
    organization."""
    rows = [row for plan in plans for row in _notifications(plan)]
    ids: dict[int, list[int]] = {}  # the pages written, by page event: one per alert
    if rows:
        inserted = Notification.insert_many(rows).on_conflict_ignore().returning(Notification.id, Notification.event)
        for row in inserted.execute():
            ids.setdefault(row.event_id, []).append(row.id)
    moves: dict[tuple[int, int, datetime | None, str], list[int]] = {}
    for plan in plans:
        if plan.pages:
            replies.make(plan.alert.id, ids.get(plan.alert.event_id, []), now, settings)  # SMS pages ask for a code
        moves.setdefault(_move(plan, now), []).append(plan.alert.id)
    for (level, round_, next_at, status), alert_ids in moves.items():
        OnCallAlert.update(
            level=level, round=round_, status=status, next_escalation_at=next_at, escalation_sent_at=None,
            updated_at=now,
        ).where(OnCallAlert.id.in_(alert_ids)).execute()  # fmt: skip
    _write([step for plan in plans for step in plan.steps])
    exhausted = [_exhausted(plan.alert) for plan in plans if not plan.pages]
    return Outcome(notifications=[i for plan in plans for i in ids.get(plan.alert.event_id, [])], events=exhausted)


def _move(plan: _Plan, now: datetime) -> tuple[int, int, datetime | None, str]:
    """Where the plan moves its alert: level, round, next escalation and status."""
    if not plan.pages:
        return plan.level, plan.round, None, EXHAUSTED
    wait = timedelta(seconds=plan.alert.policy["levels"][plan.level - 1]["wait_seconds"])
    return plan.level, plan.round, now + wait, TRIGGERED


def _exhausted(alert: OnCallAlert) -> int:
    """Tell the organization's channels that no one acknowledged ``alert``; returns the event's id."""
    policy = alert.policy
    event_id = events.emit(
        ONCALL_EXHAUSTED,
        alert.organization_id,
        {**Event.get_by_id(alert.event_id).payload, "policy": policy["name"], "rounds": policy["repeat"] + 1},
        audience=CHANNELS_ONLY,
        component_id=alert.component_id,
        incident_id=alert.incident_id,
    )
    logger.warning("On-call alert %s is exhausted: no one acknowledged; it stays open.", alert.id)
    return event_id


def _after(policy: dict[str, Any], level: int, round_: int) -> tuple[int, int]:
    """The level and round that come after ``level`` of ``round_``."""
    return (level + 1, round_) if level < len(policy["levels"]) else (1, round_ + 1)


def _links(alert: OnCallAlert, pages: list[paging.Page], now: datetime, settings: Settings | None) -> list[str | None]:
    """Each page's acknowledgement link, made now (it works `tokens.LIFETIME` from the page), or
    None for each when the settings give no endpoint or key."""
    if settings is None or not (settings.ack_url and settings.ack_secret):
        return [None] * len(pages)
    return [tokens.link(settings.ack_url, alert.id, page.person, now, settings.ack_secret) for page in pages]


def _notifications(plan: _Plan) -> list[dict[str, Any]]:
    """The rows of the plan's pages: one per person and channel, keyed by level, round, person and channel."""
    alert = plan.alert
    return [
        {
            "event": alert.event_id,
            "organization": alert.organization_id,
            "person": page.person_id,
            "key": f"{plan.level}.{plan.round}.{page.person_id}.{channel}",
            "kind": channel,
            "destination": f"{channel} page to {page.person}",
            "link": link,
        }
        for page, link in zip(plan.pages, plan.links, strict=True)
        for channel in page.channels
    ]


def _cancelled(alert: OnCallAlert, how: str) -> str:
    """Cancel the alert's pages not sent yet (those being sent go on); says how many, or ""."""
    cancelled = (
        Notification.update(status=CANCELLED, last_error=f"not sent: the alert was {how} first")
        .where(Notification.event == alert.event_id, Notification.status == PENDING)
        .execute()
    )
    return f"; {cancelled} page(s) not sent yet were cancelled" if cancelled else ""


def _unsent(alert: OnCallAlert) -> list[int]:
    query = Notification.select(Notification.id).where(
        Notification.event == alert.event_id, Notification.status == PENDING
    )
    return [row.id for row in query.order_by(Notification.id)]


def _alert(alert_id: int) -> OnCallAlert:
    alert = OnCallAlert.get_or_none(OnCallAlert.id == alert_id)
    if alert is None:
        raise LookupError(f"no alert {alert_id} (pulse oncall alerts lists them)")
    return alert


def _already(alert: OnCallAlert) -> str:
    if alert.status == ACKNOWLEDGED:
        who = alert.acknowledged_by or "an operator"
        return f"alert {alert.id} was acknowledged already, by {who} at {alert.acknowledged_at:%Y-%m-%d %H:%M:%S} UTC"
    return f"alert {alert.id} is resolved already (at {alert.resolved_at:%Y-%m-%d %H:%M:%S} UTC)"


def _step(
    alert: OnCallAlert,
    at: datetime,
    kind: str,
    note: str,
    *,
    level: int | None = None,
    round_: int | None = None,
    person: str | None = None,
    channel: str | None = None,
) -> dict[str, Any]:
    return {
        "alert": alert.id,
        "at": at,
        "kind": kind,
        "level": level,
        "round": round_,
        "person": person,
        "channel": channel,
        "note": note,
    }


def _write(steps: list[dict[str, Any]]) -> None:
    if steps:
        OnCallTimeline.insert_many(steps).execute()
