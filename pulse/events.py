"""The event outbox: events are written with the change they describe, then handed to the
notifications queue as ``broadcast(event_id)``, and an incident's opening and resolution to the
on-call queue as ``alert(incident_id)`` and ``resolve(incident_id)``.

A worker sends the events it wrote once it has committed them (`publish`). The outbox's
claim-and-send loop (`claim`, `schedules/outbox.py`) sends every event still unsent `GRACE` after
it was written: those `pulse serve` writes (the API's incidents: it never speaks to RabbitMQ), and
those a worker wrote but could not send (it stopped, or RabbitMQ was away), with a warning for the
ones that waited past `LATE`."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import dramatiq

from pulse.db import db
from pulse.models import Event, utcnow
from pulse.models.event import EVERYONE, INCIDENT_OPENED, INCIDENT_RESOLVED, ONCALL_EXHAUSTED
from pulse.rabbitmq import PRIORITY_ROUTINE, PRIORITY_URGENT

logger = logging.getLogger(__name__)

QUEUE, ACTOR = "notifications", "broadcast"
ONCALL = {INCIDENT_OPENED: "alert", INCIDENT_RESOLVED: "resolve"}  # the on-call queue's actor for each
GRACE = timedelta(seconds=5)  # an event unsent this long after it was written is the outbox loop's
LATE = timedelta(seconds=30)  # an event that waited this long to be sent is told in a warning
CLAIM_MAX = 500  # events in one claim

CLAIM = """
UPDATE event e SET sent_at = %(now)s
FROM (SELECT id FROM event WHERE sent_at IS NULL AND created_at <= %(before)s
      ORDER BY created_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED) due
WHERE e.id = due.id
RETURNING e.id, e.type, e.incident_id, e.created_at
"""
URGENT = frozenset({INCIDENT_OPENED, ONCALL_EXHAUSTED})  # their broadcasts and deliveries go ahead of routine ones


def emit(
    kind: str, organization_id: int, payload: dict[str, Any], *, audience: str = EVERYONE, **links: int | None
) -> int:
    """Write an event (inside the caller's transaction). ``audience``: whom its broadcast tells (see
    `pulse.models.event`); ``links``: component_id, incident_id."""
    return Event.insert(organization=organization_id, type=kind, payload=payload, audience=audience, **links).execute()


def priority(kind: str) -> int:
    """The RabbitMQ priority of the messages about an event of type ``kind``."""
    return PRIORITY_URGENT if kind in URGENT else PRIORITY_ROUTINE


def messages(event: Event) -> list[dramatiq.Message]:
    """The event's broadcast, and for an incident's opening or resolution its on-call message."""
    return [message(key) for key in _keys(event.id, event.type, event.incident_id)]


def message(key: tuple[str, int, str]) -> dramatiq.Message:
    """The message of ``key``: (actor, event or incident id, the event's type), as `claim` returns it."""
    actor, object_id, kind = key
    if actor == ACTOR:
        options = {"broker_priority": priority(kind)}
        return dramatiq.Message(queue_name=QUEUE, actor_name=ACTOR, args=(object_id,), kwargs={}, options=options)
    options = {"broker_priority": PRIORITY_URGENT}
    return dramatiq.Message(queue_name="oncall", actor_name=actor, args=(object_id,), kwargs={}, options=options)


def _keys(event_id: int, kind: str, incident_id: int | None) -> list[tuple[str, int, str]]:
    keys = [(ACTOR, event_id, kind)]
    if kind in ONCALL and incident_id is not None:
        keys.append((ONCALL[kind], incident_id, kind))
    return keys


def publish(event_ids: Iterable[int]) -> None:
    """Send committed events to the notifications queue, then mark them sent.

    Send first, mark second: a crash in between sends an event twice (broadcast is idempotent),
    never zero times.
    """
    ids = list(event_ids)
    if not ids:
        return
    broker = dramatiq.get_broker()
    for event in Event.select().where(Event.id.in_(ids), Event.sent_at.is_null()):
        for message in messages(event):
            broker.enqueue(message)
    Event.update(sent_at=utcnow()).where(Event.id.in_(ids), Event.sent_at.is_null()).execute()


def claim(horizon: datetime) -> list[tuple[tuple[str, int, str], datetime]]:
    """Claim the events unsent `GRACE` after they were written, by ``horizon``, marking them sent
    (the loop sends their messages before it commits): each message's key (`message`) and when it
    came due."""
    params = {"now": utcnow(), "before": horizon - GRACE, "limit": CLAIM_MAX}
    rows = db.execute_sql(CLAIM, params).fetchall()
    late = sum(1 for row in rows if row[3] <= horizon - LATE)
    if late:
        logger.warning(
            "Sending %d event(s) unsent for more than %d s: their writer stopped before sending them, or RabbitMQ "
            "was away.", late, LATE.seconds,
        )  # fmt: skip
    return [(key, created_at + GRACE) for event_id, kind, incident_id, created_at in rows
            for key in _keys(event_id, kind, incident_id)]  # fmt: skip


def next_due() -> datetime | None:
    """When the oldest unsent event is the outbox loop's, or None."""
    row = db.execute_sql("SELECT min(created_at) FROM event WHERE sent_at IS NULL").fetchone()
    return row[0] + GRACE if row and row[0] else None
