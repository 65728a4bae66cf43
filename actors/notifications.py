"""The notifications queue: events fanned out to the people and systems that asked for them."""

from __future__ import annotations

import logging

import dramatiq
from dramatiq.middleware import CurrentMessage

from pulse import events
from pulse import logging as pulse_logging
from pulse.config import get_settings
from pulse.errors import PermanentError, PulseError
from pulse.middleware.dead_letters import failed_alone
from pulse.middleware.retries import max_retries
from pulse.models import Event
from pulse.notifications import delivery
from pulse.rabbitmq import PRIORITY_ROUTINE
from pulse.rabbitmq.publish import send_all

logger = logging.getLogger(__name__)

BATCH = 25  # notifications per `send_many` message, for a broadcast to more destinations than that
BUDGET_S = 20.0  # seconds a `send_many` starts deliveries for; those left go in a new message


@dramatiq.actor(queue_name="notifications", max_retries=3)
def broadcast(event_id: int) -> None:
    """Create one notification per destination of the event (once) and send each."""
    event = Event.get_or_none(Event.id == event_id)
    if event is None:
        raise PermanentError(f"event {event_id} does not exist")
    pulse_logging.bind(organizationId=event.organization_id, componentId=event.component_id)
    ids = delivery.broadcast(event_id)
    priority = events.priority(event.type)
    if len(ids) > BATCH:  # a large broadcast: in batches, one message and two statements each
        batches = [ids[start : start + BATCH] for start in range(0, len(ids), BATCH)]
        send_all([send_many.message_with_options(args=(b,), broker_priority=priority) for b in batches])
    else:  # a few destinations (channels, mostly): each its own message, none waiting behind another
        send_all([send.message_with_options(args=(i,), broker_priority=priority) for i in ids])
    logger.info("Event %s (%s): %d notification(s) to send.", event_id, event.type, len(ids))


@dramatiq.actor(queue_name="notifications", time_limit=60_000)
def send(notification_id: int, at: float | None = None) -> None:
    """Deliver one notification; ``at`` is a pacing slot reserved by an earlier attempt (epoch s)."""
    message = CurrentMessage.get_current_message()
    assert message is not None  # the CurrentMessage middleware is installed
    delivery.send(notification_id, at, message, get_settings())


@dramatiq.actor(queue_name="notifications", time_limit=60_000)
def send_many(notification_ids: list[int]) -> None:
    """Deliver a batch of one broadcast's notifications, each once (`delivery.deliver_many`).

    Each one of them whose attempt failed is retried alone as `send` (its attempt counted as that
    message's first: one WARNING line, its retries, or the dead letters on a permanent failure),
    and so is one whose destination asks to wait; those not started within `BUDGET_S` go on in a
    new batch. The others of the batch are not held up by them."""
    message = CurrentMessage.get_current_message()
    assert message is not None  # the CurrentMessage middleware is installed
    broker = dramatiq.get_broker()
    priority = message.options.get("broker_priority", PRIORITY_ROUTINE)
    final = max_retries(broker, send.message(0)) == 0
    batch = delivery.deliver_many(notification_ids, message.message_id, get_settings(), final=final, budget_s=BUDGET_S)
    for notification_id, error in batch.failed:
        if not isinstance(error, PulseError):  # a bug: its traceback, as dramatiq logs one
            logger.error("Notification %s: an unexpected error.", notification_id, exc_info=error)
        failed_alone(broker, send.message_with_options(args=(notification_id,), broker_priority=priority), error)
    for notification_id, deferred in batch.deferred:
        delivery.send_later(broker, message, notification_id, deferred)
    if batch.left:
        broker.enqueue(send_many.message_with_options(args=(batch.left,), broker_priority=priority))
