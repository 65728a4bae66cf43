"""Drill 16: two worker hosts, one dies mid-run.

Each host is a network namespace of the test's own (`tests.support.hosts`) that reaches RabbitMQ,
PostgreSQL, the checked target and the webhook receiver over its veth pair. Both hosts' workers
consume; with hundreds of checks and deliveries under way, every process of one host is
SIGKILLed (the host dies, its connections cut).

"Nothing lost or doubled" here: the other host finishes the work; every check sent is recorded
exactly once (one row per component and slot), every notification is sent, and each delivery id
reaches the receiver; a delivery cut off between the receiver's answer and its row's update (at
most one per thread of the dead host) reaches it twice, with the same id, for the receiver to drop.
"""

from collections import Counter
from datetime import timedelta
from urllib.parse import urlsplit

import pytest

from actors.notifications import broadcast
from actors.uptime import check
from pulse import rabbitmq
from pulse.models import Event, Notification, Subscriber, UptimeCheck, utcnow
from pulse.models.event import INCIDENT_OPENED
from tests.conftest import HEALTHY
from tests.support.hosts import Host, HostsUnavailableError
from tests.support.vendors import Vendors
from tests.support.wait import wait_for
from tests.support.worker import WorkerProcess

COMPONENTS, SLOTS, SUBSCRIBERS, THREADS = 50, 20, 1000, 8


@pytest.fixture
def hosts():
    try:
        made = [Host("a"), Host("b")]
    except HostsUnavailableError as e:
        pytest.skip(str(e))
    yield made
    for host in made:
        host.close()


def port(url):
    return urlsplit(url).port


@pytest.mark.minutes
def test_when_one_worker_host_dies_the_other_finishes_the_work(make_component, target, settings, hosts):
    target.answer("/health", body=HEALTHY, headers={"Content-Type": "application/json"}, delay_s=0.05)
    components = [make_component(target, key=f"c{i}") for i in range(COMPONENTS)]
    organization = components[0].organization
    start = utcnow().replace(microsecond=0) - timedelta(hours=1)
    slots = [start + timedelta(seconds=30 * n) for n in range(SLOTS)]
    with Vendors() as vendors:
        for host in hosts:  # RabbitMQ, PostgreSQL, the target, the receiver: over the host's link
            host.loopback(port(settings.broker_url), port(settings.database_url), target.port, port(vendors.base_url))
        Subscriber.insert_many(
            [
                {"organization": organization, "kind": "webhook", "address": vendors.webhook_receiver()}
                for _ in range(SUBSCRIBERS)
            ]
        ).execute()
        doomed, survivor = (WorkerProcess(threads=THREADS, host=host).wait_ready() for host in hosts)
        wait_for(lambda: consumers(settings, "uptime") == 2, "both hosts consuming", every=0.5)

        event = Event.create(organization=organization, type=INCIDENT_OPENED, payload={})
        broadcast.send(event.id)
        for slot in slots:
            for component in components:
                check.send(component.id, slot.isoformat())
        wait_for(
            lambda: UptimeCheck.select().count() > COMPONENTS and len(vendors.attempts("webhook")) > 20,
            "checks and deliveries under way",
        )
        hosts[0].kill()  # every process of the host, at once: the workers and its end of every connection
        done_before = UptimeCheck.select().count(), len(vendors.attempts("webhook"))

        wait_for(lambda: UptimeCheck.select().count() == COMPONENTS * SLOTS, "every check", timeout=120)
        wait_for(
            lambda: Notification.select().where(Notification.status == "sent").count() == SUBSCRIBERS,
            "every delivery",
            timeout=120,
        )
        received = Counter(m.headers["x-pulse-delivery"] for m in vendors.attempts("webhook"))
        assert survivor.process.poll() is None and doomed.process.poll() == -9

    assert done_before[0] < COMPONENTS * SLOTS and done_before[1] < SUBSCRIBERS  # the host died mid-run
    recorded = Counter((r.component_id, r.scheduled_at) for r in UptimeCheck.select())
    assert set(recorded) == {(c.id, s) for c in components for s in slots} and max(recorded.values()) == 1
    assert len(received) == SUBSCRIBERS  # every delivery id arrived
    repeated = sum(n - 1 for n in received.values())
    assert repeated <= THREADS, received.most_common(3)  # at most one per delivery cut off mid-flight


def consumers(settings, queue):
    return rabbitmq.management_queues(settings).get(queue, {}).get("consumers")
