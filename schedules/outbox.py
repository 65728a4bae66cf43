"""Every minute, send the events a crash left unsent (see `pulse.events`)."""

import dramatiq
from periodiq import cron

from pulse import events
from pulse.ticks import Tick


@dramatiq.actor(
    queue_name="notifications", periodic=cron("* * * * *"), actor_class=Tick, max_retries=0, time_limit=60_000
)
def sweep() -> None:
    events.sweep()
