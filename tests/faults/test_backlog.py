"""Drill 18: the uptime workers cannot keep up (every check hangs until its timeout, on one thread)
while the loop goes on claiming, then the target recovers.

"Bounded, nothing lost" here: the `uptime` queue never holds much more than PULSE_BACKLOG_BOUND
messages (the loop skips the slots coming due meanwhile and counts them); RabbitMQ raises no
memory alarm; every status change the failing checks make reaches the webhook, once, through the
notifications worker beside; and once the target answers again, checks start on time within one
interval.
"""

import threading
from collections import Counter
from datetime import timedelta

import pytest
import requests

from pulse.models import Event, Notification, UptimeCheck, utcnow
from pulse.rabbitmq import admin
from tests.conftest import HEALTHY
from tests.support.channels import webhook_channel
from tests.support.wait import wait_for
from tests.support.worker import free_port, metric

COMPONENTS, INTERVAL, BOUND = 40, 15, 10
HANG_S = 2.0  # each check hangs until its timeout (2 s): one thread takes 0.5 batch a second


def memory_alarm(settings) -> bool:
    nodes = requests.get(f"{settings.rabbitmq_api_url}/api/nodes", timeout=5).json()
    return any(node.get("mem_alarm") for node in nodes)


@pytest.mark.minutes
def test_an_overloaded_uptime_queue_stays_bounded_and_loses_no_notification(
    make_component, target, vendors, workers, settings
):
    components = [
        make_component(target, key=f"c{i}", interval_seconds=INTERVAL, failure_threshold=1, success_threshold=1)
        for i in range(COMPONENTS)
    ]
    webhook_channel(components[0].organization, vendors)
    target.answer("/health", body=HEALTHY, delay_s=HANG_S)
    port = free_port()
    env = {"PULSE_BACKLOG_BOUND": str(BOUND), "PULSE_METRICS_PORT": str(port)}
    uptime = workers("--queues", "uptime", threads=1, env=env)
    workers("--queues", "notifications", threads=4)
    depths, alarms, watching = [], [], threading.Event()

    def watch():
        while not watching.wait(0.5):
            depths.append(admin.ready_counts(settings, ["uptime"])["uptime"])
            alarms.append(memory_alarm(settings))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        wait_for(lambda: "more than PULSE_BACKLOG_BOUND (10)" in uptime.output, "the bound passed", timeout=60)
        wait_for(lambda: metric(port, "loop_slots_skipped_total", loop="uptime"), "slots skipped", timeout=30)
        target.answer("/health", body=HEALTHY)  # it answers again, at once
        recovered = utcnow()
        wait_for(lambda: "'uptime' is back under its bound" in uptime.output, "the backlog to drain", timeout=60)
        after = recovered + timedelta(seconds=INTERVAL)
        on_time = wait_for(
            lambda: list(UptimeCheck.select().where(UptimeCheck.scheduled_at > after)) or None,
            "a check due an interval after the recovery",
            timeout=3 * INTERVAL,
        )
    finally:
        watching.set()
        watcher.join()

    assert max(depths) <= BOUND + 10, depths  # the loop reads the depth once a second
    assert not any(alarms)
    assert all(c.started_at - c.scheduled_at < timedelta(seconds=1) for c in on_time), [
        (c.scheduled_at, c.started_at) for c in on_time
    ]
    wait_for(
        lambda: Notification.select().where(Notification.status == "sent").count() == Event.select().count(),
        "every event's notification",
    )
    assert Event.select().count() > 0  # the hanging checks changed statuses, and the recovery
    delivered = Counter(m.headers["x-pulse-delivery"] for m in vendors.received("webhook"))
    assert len(delivered) == Event.select().count() and max(delivered.values()) == 1
    skipped = metric(port, "loop_slots_skipped_total", loop="uptime")
    assert skipped and skipped >= 1 and "slot(s) skipped." in uptime.output
