"""On-call scheduling: the claim-and-send loop (`pulse.recurring.loop`), run by a worker process consuming
`oncall`, sends each alert's escalation when its level's wait ends (`pulse.oncall.due`); each
minute, a tick sends again the escalations that are overdue."""

import logging

from actors.oncall import escalate
from pulse.oncall import due
from pulse.rabbitmq import PRIORITY_URGENT
from pulse.recurring import loop
from pulse.recurring.ticks import tick

logger = logging.getLogger(__name__)

ESCALATIONS = loop.declare(
    loop.Loop(
        name="oncall",
        claim=due.claim,
        next_due=due.next_due,
        message=lambda key, due_at: escalate.message_with_options(args=key, broker_priority=PRIORITY_URGENT),
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
