"""The workload of the drills that kill workers mid-run: checks of many components for several
past slots and an incident broadcast to many webhooks, all sent at once; and what "nothing lost,
nothing doubled" means for it."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from actors.notifications import broadcast
from actors.uptime import check
from pulse.models import Event, Notification, Subscriber, UptimeCheck, utcnow
from pulse.models.event import INCIDENT_OPENED
from tests.conftest import HEALTHY
from tests.support.target import HTTPTarget
from tests.support.vendors import Vendors
from tests.support.wait import wait_for


class Workload:
    """``components`` components of ``target`` (each check takes 50 ms there), ``slots`` slots 30 s
    apart an hour ago, and ``subscribers`` webhook subscribers of ``vendors`` (each delivery takes
    200 ms there: a batch of 25 takes 5 s, so the broadcast is still under way once the checks are,
    even with other drills sharing the cores)."""

    def __init__(
        self, make_component: Any, target: HTTPTarget, vendors: Vendors, components: int, slots: int, subscribers: int
    ) -> None:
        target.answer("/health", body=HEALTHY, headers={"Content-Type": "application/json"}, delay_s=0.05)
        vendors.delay("webhook", 0.2)  # a large broadcast is still under way when a worker is killed
        start = utcnow().replace(microsecond=0) - timedelta(hours=1)
        later = start + timedelta(days=1)  # the workers' loop leaves them alone: these checks are sent here
        self.components = [make_component(target, key=f"c{i}", next_check_at=later) for i in range(components)]
        organization = self.components[0].organization
        self.slots = [start + timedelta(seconds=30 * n) for n in range(slots)]
        self.vendors, self.subscribers = vendors, subscribers
        hooks = [vendors.webhook_receiver() for _ in range(subscribers)]
        rows = [{"organization": organization, "kind": "webhook", "address": h} for h in hooks]
        Subscriber.insert_many(rows).execute()
        self.event = Event.create(organization=organization, type=INCIDENT_OPENED, payload={}, sent_at=utcnow())

    @property
    def checks(self) -> int:
        return len(self.components) * len(self.slots)

    def send(self) -> None:
        """The broadcast, then every check; return once some of both are done."""
        broadcast.send(self.event.id)
        for slot in self.slots:
            for component in self.components:
                check.send(component.id, slot.isoformat())
        wait_for(self.under_way, "checks and deliveries under way")

    def under_way(self) -> bool:
        checks, deliveries = self.done()
        return checks > len(self.components) and deliveries > 20

    def done(self) -> tuple[int, int]:
        """(checks recorded, deliveries received)."""
        return UptimeCheck.select().count(), len(self.vendors.attempts("webhook"))

    def finish(self, timeout: float = 120) -> None:
        wait_for(lambda: UptimeCheck.select().count() == self.checks, "every check", timeout=timeout)
        sent = Notification.select().where(Notification.status == "sent")
        wait_for(lambda: sent.count() == self.subscribers, "every delivery", timeout=timeout)

    def assert_once(self, cut_off: int) -> None:
        """Every check recorded exactly once; every delivery id received, a repeat only for each of
        at most ``cut_off`` deliveries cut off between the receiver's answer and their rows' update
        (a batch of a large broadcast records its webhook deliveries at its end: `send_many`)."""
        recorded = Counter((r.component_id, r.scheduled_at) for r in UptimeCheck.select())
        assert set(recorded) == {(c.id, s) for c in self.components for s in self.slots}
        assert max(recorded.values()) == 1
        received = Counter(m.headers["x-pulse-delivery"] for m in self.vendors.attempts("webhook"))
        assert len(received) == self.subscribers  # every delivery id arrived
        repeated = sum(n - 1 for n in received.values())
        assert repeated <= cut_off, received.most_common(3)
