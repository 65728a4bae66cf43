"""Every minute, a tick that proves scheduler, broker, worker and database work together.

`pulse health` reads the time of the last one.
"""

import dramatiq

from pulse.models import Heartbeat
from pulse.models.heartbeat import SCHEDULER
from pulse.ticks import Tick, cron


@dramatiq.actor(queue_name="cleanup", periodic=cron("* * * * *"), actor_class=Tick, max_retries=0, time_limit=30_000)
def heartbeat() -> None:
    Heartbeat.beat(SCHEDULER)
