"""A tick for scheduler tests, loaded by ``periodiq pulse.actors tests.support.utc_tick``: the daily
cleanup's cron (`schedules.cleanup`), moved to this minute and the next two in UTC. A scheduler
started now sends it at once, at its first wake-up, if it reads the cron as the daily cleanup's is
read: in UTC, whatever its local time zone. No worker consumes it in those tests.
"""

import dramatiq
import pendulum

from pulse.recurring.ticks import Tick
from schedules.cleanup import cleanup_tick

SOON = [pendulum.now("UTC").add(minutes=n) for n in range(3)]
#: The UTC (hour, minute) of the slots it may be sent for.
SLOTS = {(slot.hour, slot.minute) for slot in SOON}
SPEC = cleanup_tick.options["periodic"].replace(
    m=sorted({slot.minute for slot in SOON}), h=sorted({slot.hour for slot in SOON})
)


@dramatiq.actor(queue_name="cleanup", periodic=SPEC, actor_class=Tick, max_retries=0)
def utc_tick() -> None:
    """Does nothing: the test reads when the scheduler sent it."""
