"""Drill 9: the worker running the uptime scheduling loop is SIGKILLed while it runs.

"Nothing late" here: the loop's turn (a PostgreSQL advisory lock) dies with the worker's
connection, and the other worker takes it within about a second and carries the loop on, so every
component is checked at every slot, each within a few seconds of it, whenever the kill comes.
"""

import time
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest

from pulse.models import UptimeCheck
from tests.support.wait import wait_for

COMPONENTS, INTERVAL = 100, 15
LATE_S = 5  # the most a check may start after its slot, a takeover included
RUNNING = "uptime loop: running in this process."
WATCHED_S = 50  # slots due this long after the start are checked


@pytest.mark.minutes
@pytest.mark.parametrize("kill_after", [5, 35])
def test_killing_the_loops_worker_leaves_no_slot_late(kill_after, make_component, target, workers):
    for i in range(COMPONENTS):
        make_component(target, key=f"c{i}", interval_seconds=INTERVAL)
    pair = [workers(threads=4), workers(threads=4)]
    running = wait_for(lambda: next((w for w in pair if RUNNING in w.output), None), "a worker running the loop")
    tick = datetime.now(UTC)  # the loop has just begun: it gives each component its first slot
    time.sleep(max(0.0, (tick + timedelta(seconds=kill_after) - datetime.now(UTC)).total_seconds()))
    running.kill()
    [survivor] = [w for w in pair if w is not running]
    wait_for(lambda: RUNNING in survivor.output, "the other worker to take the loop over", timeout=LATE_S)
    end = tick + timedelta(seconds=WATCHED_S)
    time.sleep((end - datetime.now(UTC)).total_seconds() + LATE_S)

    watched = list(UptimeCheck.select().where(UptimeCheck.scheduled_at <= end).order_by(UptimeCheck.scheduled_at))
    late = [c for c in watched if c.started_at - c.scheduled_at > timedelta(seconds=LATE_S)]
    assert late == [], [(c.component_id, c.scheduled_at, c.started_at - c.scheduled_at) for c in late[:5]]
    by_component: dict[int, list[datetime]] = {}
    for c in watched:
        by_component.setdefault(c.component_id, []).append(c.scheduled_at)
    assert len(by_component) == COMPONENTS  # each had its first slot within its first interval
    for slots in by_component.values():
        assert slots[0] <= tick + timedelta(seconds=INTERVAL + 1)
        assert [b - a for a, b in pairwise(slots)] == [timedelta(seconds=INTERVAL)] * (len(slots) - 1)
        assert slots[-1] > end - timedelta(seconds=INTERVAL)  # none stopped before the end
