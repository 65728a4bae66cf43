"""The notifications queue: events fanned out to the people and systems that asked for them."""

from __future__ import annotations

import logging
import time

import dramatiq
from dramatiq.middleware import CurrentMessage

from pulse import delivery
from pulse import logging as pulse_logging
from pulse.config import get_settings
from pulse.errors import PermanentError
from pulse.models import Event
from pulse.models.event import INCIDENT_OPENED
from pulse.rabbitmq import PRIORITY_ROUTINE, PRIORITY_URGENT, send_all

logger = logging.getLogger(__name__)
URGENT = frozenset({INCIDENT_OPENED})


@dramatiq.actor(queue_name="notifications", max_retries=3)
def broadcast(event_id: int) -> None:
    """Create one notification per destination of the event (once) and send each."""
    event = Event.get_or_none(Event.id == event_id)
    if event is None:
        raise PermanentError(f"event {event_id} does not exist")
    pulse_logging.bind(organizationId=event.organization_id, componentId=event.component_id)
    ids = delivery.broadcast(event_id)
    priority = PRIORITY_URGENT if event.type in URGENT else PRIORITY_ROUTINE
    send_all([send.message_with_options(args=(i,), broker_priority=priority) for i in ids])
    logger.info("Event %s (%s): %d notification(s) to send.", event_id, event.type, len(ids))


@dramatiq.actor(queue_name="notifications", time_limit=60_000)
def send(notification_id: int, at: float | None = None) -> None:
    """Deliver one notification; ``at`` is a pacing slot reserved by an earlier attempt (epoch s)."""
    message = CurrentMessage.get_current_message()
    assert message is not None  # the CurrentMessage middleware is installed
    settings = get_settings()
    final = message.options.get("retries", 0) >= send.options.get("max_retries", settings.max_retries)
    deferred = delivery.deliver(notification_id, message.message_id, settings, at=at, final=final)
    if deferred is not None:
        send.send_with_options(
            args=(notification_id,),
            kwargs={"at": deferred.at},
            delay=max(0, round((deferred.at - time.time()) * 1000)),
            broker_priority=message.options.get("broker_priority", PRIORITY_ROUTINE),
        )
