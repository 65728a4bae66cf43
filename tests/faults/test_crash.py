"""Drill 1: a worker process SIGKILLed with hundreds of checks and deliveries in flight.

"Nothing lost" here: after a new worker starts, every check sent is recorded exactly once (one
row per component and slot) and every notification is sent; each webhook delivery id reaches
the receiver, which can drop the rare second copy of a delivery cut off between the receiver's
answer and the row's update.
"""

from collections import Counter
from datetime import timedelta

from actors.notifications import broadcast
from actors.uptime import check
from pulse.models import Event, Notification, Subscriber, UptimeCheck, utcnow
from pulse.models.event import INCIDENT_OPENED
from tests.conftest import HEALTHY
from tests.support.vendors import Vendors
from tests.support.wait import wait_for

COMPONENTS, SLOTS, SUBSCRIBERS, THREADS = 50, 6, 200, 8


def test_a_killed_worker_loses_no_check_and_no_delivery(make_component, target, workers):
    target.answer("/health", body=HEALTHY, headers={"Content-Type": "application/json"}, delay_s=0.05)
    components = [make_component(target, key=f"c{i}") for i in range(COMPONENTS)]
    organization = components[0].organization
    start = utcnow().replace(microsecond=0) - timedelta(hours=1)
    slots = [start + timedelta(seconds=30 * n) for n in range(SLOTS)]
    with Vendors() as vendors:
        Subscriber.insert_many(
            [
                {"organization": organization, "kind": "webhook", "address": vendors.webhook_receiver()}
                for _ in range(SUBSCRIBERS)
            ]
        ).execute()
        event = Event.create(organization=organization, type=INCIDENT_OPENED, payload={})
        first = workers(threads=THREADS)
        broadcast.send(event.id)
        for slot in slots:
            for component in components:
                check.send(component.id, slot.isoformat())
        wait_for(
            lambda: UptimeCheck.select().count() > COMPONENTS and len(vendors.received("webhook")) > 20,
            "checks and deliveries under way",
        )

        first.kill()  # SIGKILL: no goodbye, messages in flight and prefetched
        done_before = UptimeCheck.select().count(), len(vendors.received("webhook"))
        workers(threads=THREADS)

        wait_for(lambda: UptimeCheck.select().count() == COMPONENTS * SLOTS, "every check", timeout=90)
        wait_for(
            lambda: Notification.select().where(Notification.status == "sent").count() == SUBSCRIBERS,
            "every delivery",
            timeout=90,
        )
        received = Counter(m.headers["x-pulse-delivery"] for m in vendors.received("webhook"))

    assert done_before[0] < COMPONENTS * SLOTS and done_before[1] < SUBSCRIBERS  # the kill was mid-run
    recorded = Counter((r.component_id, r.scheduled_at) for r in UptimeCheck.select())
    assert set(recorded) == {(c.id, s) for c in components for s in slots} and max(recorded.values()) == 1
    assert len(received) == SUBSCRIBERS  # every delivery id arrived
    repeated = sum(n - 1 for n in received.values())
    assert repeated <= THREADS, received.most_common(3)  # at most one per delivery cut off mid-flight
