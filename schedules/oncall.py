"""On-call scheduling: the claim-and-send loops (`pulse.recurring.loop`), run by a worker process
consuming `oncall`: one sends each alert's escalation when its level's wait ends
(`pulse.oncall.due`), the other each alert source whose events wait to be applied
(`pulse.sources.due`); each minute, a tick sends again the escalations that are overdue, and the
events no message will apply any more; another reminds whoever acknowledged an alert still open
(`pulse.oncall.reminders`)."""

import logging
from datetime import timedelta

from actors.notifications import send
from actors.oncall import alert_events, escalations
from pulse.models import utcnow
from pulse.oncall import due, reminders
from pulse.rabbitmq import PRIORITY_URGENT
from pulse.rabbitmq.publish import send_all
from pulse.recurring import loop
from pulse.recurring.ticks import tick
from pulse.sources import due as sources

logger = logging.getLogger(__name__)

ESCALATIONS = loop.declare(
    loop.Loop(
        name="oncall",
        claim=due.claim,
        next_due=due.next_due,
        message=lambda key, due_at: escalations.message_with_options(
            args=([list(key)],), broker_priority=PRIORITY_URGENT
        ),
        batch=lambda rows: escalations.message_with_options(
            args=([list(key) for key, _ in rows],), broker_priority=PRIORITY_URGENT
        ),
        # An escalation may leave up to 500 ms after its level's wait ends, with every other one
        # due by then, in one message: for a few times less CPU each (docs/performance.md).
        gather=timedelta(milliseconds=500),
    )
)

ALERT_SOURCES = loop.declare(
    loop.Loop(
        name="alert-sources",
        queue="oncall",
        claim=sources.claim,
        next_due=sources.next_due,
        message=lambda source_id, due_at: alert_events.message_with_options(
            args=(source_id,), broker_priority=PRIORITY_URGENT
        ),
        ahead=False,  # events are applied once they are recorded
    )
)


@tick("oncall", "* * * * *")
def redrive_tick() -> None:
    overdue = due.redrive()
    if overdue:
        logger.warning(
            "%d escalation(s) overdue by more than %s: sent again (alerts %s).",
            len(overdue), due.OVERDUE, ", ".join(str(i) for i in overdue[:20]),
        )  # fmt: skip
    waiting = sources.redrive(utcnow())
    if waiting:
        logger.warning(
            "%d alert source(s) with events waiting more than %s: handed to a worker again (sources %s).",
            len(waiting), sources.OVERDUE, ", ".join(str(i) for i in waiting[:20]),
        )  # fmt: skip


@tick("oncall", "* * * * *")
def remind_tick() -> None:
    sent = reminders.due(utcnow())
    send_all([send.message_with_options(args=(i,), broker_priority=PRIORITY_URGENT) for i in sent])
    if sent:
        logger.info("Sent %d acknowledgement reminder(s).", len(sent))
