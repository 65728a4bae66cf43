"""Calculated-metrics scheduling: each minute's tick sends a leg of the claim-and-send loop
(`pulse.loop`), which sends each marked metric's evaluation when it comes due
(`pulse.calculated.due`)."""

import dramatiq
from periodiq import cron

from actors.calculated import recalculate
from pulse import loop
from pulse.calculated import due
from pulse.ticks import Tick

EVALUATIONS = loop.Schedule(
    name="calculated-metrics",
    claim=due.claim,
    next_due=due.next_due,
    message=lambda metric_id, due_at: recalculate.message(metric_id, due_at.isoformat()),
)


@dramatiq.actor(
    queue_name="calculated-metrics",
    actor_name="schedule_evaluations",
    periodic=cron("* * * * *"),
    actor_class=Tick,
    max_retries=0,
    time_limit=30_000,
)
def schedule() -> None:
    loop.start(run_loop)


@dramatiq.actor(
    queue_name="calculated-metrics",
    actor_name="calculated_loop",
    priority=-1,
    max_retries=0,
    time_limit=loop.LEG_TIME_LIMIT,
)
def run_loop(until: float) -> None:
    loop.run(EVALUATIONS, until, run_loop)
