"""Every minute, a tick that proves scheduler, broker, worker and database work together.

`pulse health` reads the time of the last one.
"""

from pulse.models import Heartbeat
from pulse.models.heartbeat import SCHEDULER
from pulse.recurring.ticks import tick


@tick("cleanup", "* * * * *")
def heartbeat_tick() -> None:
    Heartbeat.beat(SCHEDULER)
