"""On-call scheduling: each minute's tick sends a leg of the claim-and-send loop (`pulse.loop`),
which sends each alert's escalation when its level's wait ends (`pulse.oncall.due`), and re-drives
escalations that are overdue."""

import logging

import dramatiq
from periodiq import cron

from actors.oncall import escalate
from pulse import loop
from pulse.oncall import due
from pulse.rabbitmq import PRIORITY_URGENT
from pulse.ticks import Tick

logger = logging.getLogger(__name__)

ESCALATIONS = loop.Schedule(
    name="oncall",
    claim=due.claim,
    next_due=due.next_due,
    message=lambda key, due_at: escalate.message_with_options(args=key, broker_priority=PRIORITY_URGENT),
)


@dramatiq.actor(
    queue_name="oncall", actor_name="schedule_escalations", periodic=cron("* * * * *"), actor_class=Tick,
    max_retries=0, time_limit=30_000,
)  # fmt: skip
def schedule() -> None:
    loop.start(run_loop)
    overdue = due.redrive()
    if overdue:
        logger.warning(
            "%d escalation(s) overdue by more than %s: sent again (alerts %s).",
            len(overdue), due.OVERDUE, ", ".join(str(i) for i in overdue[:20]),
        )  # fmt: skip


@dramatiq.actor(
    queue_name="oncall", actor_name="oncall_loop", priority=-1, max_retries=0, time_limit=loop.LEG_TIME_LIMIT
)
def run_loop(until: float) -> None:
    loop.run(ESCALATIONS, until, run_loop)
