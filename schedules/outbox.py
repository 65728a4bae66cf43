"""The outbox: a claim-and-send loop (`pulse.recurring.loop`), run by a worker process consuming
`notifications`, sends the events their writer did not (`pulse.events`: `pulse serve`'s, and a
stopped worker's). Every minute, a tick sends the notifications no message will deliver any more
(`pulse.notifications.sweep`); another tells the channels again of the incidents still open of
components that repeat while down (`pulse.components.repeats`)."""

import logging

from actors.notifications import send
from pulse import events
from pulse.components import repeats
from pulse.models import utcnow
from pulse.notifications import sweep as notifications
from pulse.rabbitmq.publish import send_all
from pulse.recurring import loop
from pulse.recurring.ticks import tick

logger = logging.getLogger(__name__)

OUTBOX = loop.declare(
    loop.Loop(
        name="outbox",
        queue="notifications",
        claim=events.claim,
        next_due=events.next_due,
        message=lambda key, due_at: events.message(key),
        ahead=False,  # an event is its writer's to send for its grace
    )
)


@tick("notifications", "* * * * *", time_limit_ms=60_000)
def sweep_tick() -> None:
    stale = notifications.stale()
    if stale:
        send_all([send.message(notification_id) for notification_id in stale])
        logger.warning("Sent %d notification(s) again that no message would deliver any more.", len(stale))


@tick("notifications", "* * * * *")
def repeat_tick() -> None:
    written = repeats.due(utcnow())
    events.publish(written)
    if written:
        logger.info("%d incident(s) still open: their channels are told again.", len(written))
