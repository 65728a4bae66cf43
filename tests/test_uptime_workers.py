"""Scheduling through real `dramatiq pulse.actors` workers: slots on time, each checked once."""

from datetime import timedelta

from pulse.models import UptimeCheck, utcnow
from schedules.uptime import schedule
from tests.support.wait import wait_for
from tests.support.worker import free_port, metric


def test_two_schedulers_send_each_slot_once_and_on_time(make_component, target, workers):
    port = free_port()
    start = utcnow() + timedelta(seconds=2)
    fast = make_component(target, key="fast", interval_seconds=15, next_check_at=start)
    make_component(target, key="daily", interval_seconds=86400, next_check_at=start + timedelta(hours=1))
    workers(threads=4, env={"PULSE_METRICS_PORT": str(port)})

    schedule.send()
    schedule.send()  # a second scheduler at the same time
    rows = wait_for(
        lambda: (found := list(UptimeCheck.select().order_by(UptimeCheck.scheduled_at))) and len(found) >= 2 and found,
        "two checks of the 15 s component",
        timeout=45,
    )

    assert [r.component_id for r in rows] == [fast.id, fast.id]
    assert [r.scheduled_at for r in rows] == [start, start + timedelta(seconds=15)]
    for row in rows:
        assert timedelta(0) <= row.started_at - row.scheduled_at < timedelta(seconds=1)
    # Each slot was sent once: as many check messages processed as slots, and requests made.
    assert wait_for(lambda: metric(port, "worker_task_success_total", task_name="check") == 2, "2 checks")
    assert len(target.received) == 2
