"""The notifications queue: events fanned out to the people and systems that asked for them."""

from __future__ import annotations

import logging

import dramatiq
from dramatiq.middleware import CurrentMessage

from pulse import events
from pulse import logging as pulse_logging
from pulse.config import get_settings
from pulse.errors import PermanentError
from pulse.models import Event
from pulse.notifications import delivery
from pulse.rabbitmq.publish import send_all

logger = logging.getLogger(__name__)


@dramatiq.actor(queue_name="notifications", max_retries=3)
def broadcast(event_id: int) -> None:
    """Create one notification per destination of the event (once) and send each."""
    event = Event.get_or_none(Event.id == event_id)
    if event is None:
        raise PermanentError(f"event {event_id} does not exist")
    pulse_logging.bind(organizationId=event.organization_id, componentId=event.component_id)
    ids = delivery.broadcast(event_id)
    priority = events.priority(event.type)
    send_all([send.message_with_options(args=(i,), broker_priority=priority) for i in ids])
    logger.info("Event %s (%s): %d notification(s) to send.", event_id, event.type, len(ids))


@dramatiq.actor(queue_name="notifications", time_limit=60_000)
def send(notification_id: int, at: float | None = None) -> None:
    """Deliver one notification; ``at`` is a pacing slot reserved by an earlier attempt (epoch s)."""
    message = CurrentMessage.get_current_message()
    assert message is not None  # the CurrentMessage middleware is installed
    delivery.send(notification_id, at, message, get_settings())
