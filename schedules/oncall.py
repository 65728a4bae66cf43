"""On-call scheduling: the claim-and-send loop (`pulse.loop`), run by a worker process consuming
`oncall`, sends each alert's escalation when its level's wait ends (`pulse.oncall.due`); each
minute, a tick sends again the escalations that are overdue."""

import logging

import dramatiq

from actors.oncall import escalate
from pulse import loop
from pulse.oncall import due
from pulse.rabbitmq import PRIORITY_URGENT
from pulse.ticks import Tick, cron

logger = logging.getLogger(__name__)

ESCALATIONS = loop.declare(
    loop.Schedule(
        name="oncall",
        claim=due.claim,
        next_due=due.next_due,
        message=lambda key, due_at: escalate.message_with_options(args=key, broker_priority=PRIORITY_URGENT),
    )
)


@dramatiq.actor(
    queue_name="oncall", actor_name="redrive_escalations", periodic=cron("* * * * *"), actor_class=Tick,
    max_retries=0, time_limit=30_000,
)  # fmt: skip
def redrive() -> None:
    overdue = due.redrive()
    if overdue:
        logger.warning(
            "%d escalation(s) overdue by more than %s: sent again (alerts %s).",
            len(overdue), due.OVERDUE, ", ".join(str(i) for i in overdue[:20]),
        )  # fmt: skip
