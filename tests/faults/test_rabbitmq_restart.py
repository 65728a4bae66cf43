"""Drill 2: RabbitMQ stops (`rabbitmqctl stop_app`) across a minute's tick and starts again.

"Nothing lost" here: the workers and the scheduler reconnect by themselves within 30 s (no
process restarted; periodiq's tick in the outage is sent late, once the broker is back, or
skipped); checks are scheduled again; an event written while RabbitMQ was down (its
send failed) is sent by the outbox sweep and delivered; every event ends sent and delivered once.
"""

import time
from collections import Counter
from datetime import timedelta

import pytest
import requests

from pulse import events
from pulse.db import db
from pulse.models import Event, Notification, UptimeCheck, utcnow
from pulse.models.event import STATUS_CHANGED
from tests.support.channels import webhook_channel
from tests.support.restarts import rabbitmqctl
from tests.support.vendors import Vendors
from tests.support.wait import wait_for


def consumers(settings, queue):
    url = f"{settings.rabbitmq_api_url}/api/queues/{requests.utils.quote(settings.vhost, safe='')}/{queue}"
    try:
        return requests.get(url, timeout=2).json().get("consumers", 0)
    except (requests.RequestException, ValueError):
        return 0  # the management API is down with the broker


@pytest.mark.minutes
@pytest.mark.restarts
def test_workers_and_scheduler_reconnect_and_nothing_is_lost(
    make_component, target, workers, schedulers, settings, rabbitmq_started_at_the_end
):
    components = [make_component(target, key=f"c{i}", interval_seconds=15) for i in range(5)]
    organization = components[0].organization
    with Vendors() as vendors:
        webhook_channel(organization, vendors)
        worker = workers(threads=8)
        scheduler = schedulers()
        wait_for(lambda: UptimeCheck.select().count() >= len(components), "the first checks", timeout=30)

        # Stop RabbitMQ from 5 s before the next minute (a tick) to 5 s after it.
        boundary = (utcnow() + timedelta(minutes=1)).replace(second=0, microsecond=0)
        if boundary - utcnow() < timedelta(seconds=8):
            boundary += timedelta(minutes=1)
        time.sleep((boundary - timedelta(seconds=5) - utcnow()).total_seconds())  # a moment on the clock
        rabbitmqctl("stop_app")
        with db.atomic():  # a change made while RabbitMQ is down: its event is committed...
            lost = events.emit(STATUS_CHANGED, organization.id, {"component": {"name": "Public API"}})
        with pytest.raises(Exception):  # noqa: B017 - ...and its send fails, whatever the error type
            events.publish([lost])
        time.sleep(max(0.0, (boundary + timedelta(seconds=5) - utcnow()).total_seconds()))
        rabbitmqctl("start_app")
        restarted = utcnow()

        wait_for(
            lambda: all(consumers(settings, q) >= 1 for q in ("uptime", "notifications")),
            "workers consuming again",
            timeout=30,
        )
        assert worker.process.poll() is None and scheduler.process.poll() is None, scheduler.output[-2000:]
        wait_for(
            lambda: UptimeCheck.select().where(UptimeCheck.scheduled_at > restarted).count() >= len(components),
            "checks scheduled after the restart",
            timeout=45,
        )
        # The outbox loop sends the event the outage left behind; it is delivered.
        wait_for(
            lambda: (
                Event.get_by_id(lost).sent_at is not None
                and Notification.select().where(Notification.status == "sent").count() == Event.select().count()
            ),
            "every event sent and delivered",
            timeout=120,
        )
        delivered = Counter(m.headers["x-pulse-event"] for m in vendors.received("webhook"))

    assert sum(delivered.values()) == Event.select().count() >= 1
