"""Metrics scheduling: each minute's tick sends a leg of the claim-and-send loop (`pulse.loop`),
which sends each query's poll at its slot."""

import dramatiq
from periodiq import cron

from actors.metrics import poll
from pulse import loop
from pulse.metrics import schedule as due
from pulse.ticks import Tick

POLLS = loop.Schedule(
    name="metrics",
    claim=due.claim,
    next_due=due.next_due,
    message=lambda query_id, slot: poll.message(query_id, slot.isoformat()),
    prepare=due.start_new,
)


@dramatiq.actor(
    queue_name="metrics",
    actor_name="schedule_polls",
    periodic=cron("* * * * *"),
    actor_class=Tick,
    max_retries=0,
    time_limit=30_000,
)
def schedule() -> None:
    loop.start(run_loop)


@dramatiq.actor(
    queue_name="metrics", actor_name="metrics_loop", priority=-1, max_retries=0, time_limit=loop.LEG_TIME_LIMIT
)
def run_loop(until: float) -> None:
    loop.run(POLLS, until, run_loop)
