"""The event outbox: events are written with the change they describe, then handed to the
notifications queue as ``broadcast(event_id)``, and an incident's opening and resolution to the
on-call queue as ``alert(incident_id)`` and ``resolve(incident_id)``; a sweep sends whatever a
crash left behind."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import dramatiq

from pulse.db import db
from pulse.models import Event, utcnow
from pulse.models.event import EVERYONE, INCIDENT_OPENED, INCIDENT_RESOLVED, ONCALL_EXHAUSTED
from pulse.rabbitmq import PRIORITY_ROUTINE, PRIORITY_URGENT

logger = logging.getLogger(__name__)

QUEUE, ACTOR = "notifications", "broadcast"
ONCALL = {INCIDENT_OPENED: "alert", INCIDENT_RESOLVED: "resolve"}  # the on-call queue's actor for each
SWEEP_AFTER = timedelta(seconds=30)  # an event unsent this long is the sweep's
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
    options = {"broker_priority": priority(event.type)}
    sent: list[dramatiq.Message[Any]] = [
        dramatiq.Message(queue_name=QUEUE, actor_name=ACTOR, args=(event.id,), kwargs={}, options=options)
    ]
    if event.type in ONCALL and event.incident_id is not None:
        sent.append(
            dramatiq.Message(
                queue_name="oncall",
                actor_name=ONCALL[event.type],
                args=(event.incident_id,),
                kwargs={},
                options={"broker_priority": PRIORITY_URGENT},
            )
        )
    return sent


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


def sweep(limit: int = 500) -> int:
    """Send events left unsent for more than `SWEEP_AFTER`. Returns how many.

    The rows stay locked (SKIP LOCKED for a concurrent sweep) until they are marked sent.
    """
    broker = dramatiq.get_broker()
    with db.atomic():
        events = list(
            Event.select()
            .where(Event.sent_at.is_null(), Event.created_at < utcnow() - SWEEP_AFTER)
            .order_by(Event.id)
            .limit(limit)
            .for_update(skip_locked=True)
        )
        for event in events:
            for message in messages(event):
                broker.enqueue(message)
        if events:
            Event.update(sent_at=utcnow()).where(Event.id.in_([e.id for e in events])).execute()
            logger.warning("Sent %d event(s) the outbox had left behind.", len(events))
    return len(events)
