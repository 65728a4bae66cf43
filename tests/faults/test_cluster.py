"""Drill 15: Pulse on a three-node RabbitMQ cluster with quorum queues loses a node, twice.

The test starts its own cluster (`tests.support.cluster`: nodes of its own names, ports and data
directories; the system's RabbitMQ is untouched) and runs workers and the scheduler against it
with PULSE_QUEUE_TYPE=quorum, while components are checked every 15 s and an event is fanned out
to three webhooks every half second. It SIGKILLs the node the workers are connected to, brings it
back, then SIGKILLs the node leading the queues, and brings it back.

"Nothing lost, nothing doubled" here: every slot of every component, from its first to its last
claimed, is recorded once in PostgreSQL; every notification is sent, and the receiver gets each
delivery id once; after each kill, checks and deliveries start again within 30 s, with no process
restarted.
"""

import dataclasses
import itertools
import threading
import time
from collections import Counter
from datetime import timedelta

import dramatiq
import pytest
from peewee import fn

from pulse import events
from pulse.app.workers import build_broker
from pulse.db import db
from pulse.models import Component, Event, Notification, Subscriber, UptimeCheck, utcnow
from pulse.models.event import STATUS_CHANGED
from pulse.rabbitmq.admin import ready_counts
from tests.support.cluster import Cluster
from tests.support.vendors import Vendors
from tests.support.wait import wait_for
from tests.support.worker import SchedulerProcess, WorkerProcess

COMPONENTS, SUBSCRIBERS, INTERVAL = 20, 3, 15
BACK_WITHIN = timedelta(seconds=30)
WATCHED = ("uptime", "notifications", "uptime.urgent", "notifications.urgent")


class Feeder(threading.Thread):
    """Writes and publishes an event every half second, as a status change would; an event whose
    publish fails (the broker fails over) is left to the outbox's sweep."""

    def __init__(self, organization_id: int) -> None:
        super().__init__(daemon=True)
        self.organization_id = organization_id
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(0.5):
            with db.atomic():
                event_id = events.emit(STATUS_CHANGED, self.organization_id, {"component": {"name": "API"}})
            try:
                events.publish([event_id])
            except dramatiq.errors.BrokerConnectionError:
                pass
        db.close()


def kill_and_restart(cluster, node):
    """SIGKILL a node while work flows and start it again; the time Pulse took to work again."""
    time.sleep(5)  # checks and deliveries flowing
    killed_at = utcnow()
    cluster.kill(node)
    back = wait_for(lambda: back_after(killed_at), f"checks and deliveries after {node} was killed", timeout=60)
    cluster.restart(node)
    return back


def freeze():
    """No slot comes due any more: each component's next slot a day later. Returns each one's last
    claimed slot (a claim in progress commits first: it holds the rows)."""
    rows = db.execute_sql(
        "UPDATE component SET next_check_at = next_check_at + interval '1 day'"
        " RETURNING id, next_check_at - interval '1 day' - make_interval(secs => interval_seconds)"
    )
    return dict(rows.fetchall())


def recorded_last():
    """Each component's last recorded slot."""
    rows = UptimeCheck.select(UptimeCheck.component, fn.max(UptimeCheck.scheduled_at)).group_by(UptimeCheck.component)
    return dict(rows.tuples())


def back_after(killed_at):
    """Seconds from a kill to the first check started and the first delivery sent after it."""
    check = UptimeCheck.select().where(UptimeCheck.started_at > killed_at).order_by(UptimeCheck.started_at).first()
    sent = Notification.select().where(Notification.sent_at > killed_at).order_by(Notification.sent_at).first()
    return check and sent and max(check.started_at, sent.sent_at) - killed_at


@pytest.mark.minutes
def test_a_cluster_losing_a_node_twice_loses_and_doubles_nothing(make_component, target, settings):
    components = [make_component(target, key=f"c{i}", interval_seconds=INTERVAL) for i in range(COMPONENTS)]
    organization = components[0].organization
    with Cluster() as cluster, Vendors() as vendors:
        env = {"PULSE_BROKER_URL": ",".join(cluster.urls()), "PULSE_QUEUE_TYPE": "quorum"}
        hooks = [vendors.webhook_receiver() for _ in range(SUBSCRIBERS)]
        Subscriber.insert_many(
            [{"organization": organization, "kind": "webhook", "address": h} for h in hooks]
        ).execute()
        workers = WorkerProcess(processes=2, threads=8, env=env).wait_ready()
        scheduler = SchedulerProcess(env=env).wait_ready()
        on_cluster = dataclasses.replace(settings, broker_url=env["PULSE_BROKER_URL"], queue_type="quorum")
        broker = build_broker(on_cluster)
        previous = dramatiq.get_broker()
        dramatiq.set_broker(broker)
        feeder = Feeder(organization.id)
        try:
            feeder.start()
            wait_for(lambda: UptimeCheck.select().count() >= COMPONENTS, "the first checks", timeout=60)
            wait_for(lambda: Notification.select().where(Notification.status == "sent").count() >= 10, "deliveries")

            recovered = {}
            workers_node = max(cluster.nodes, key=cluster.connections_on)
            recovered["the workers' node"] = kill_and_restart(cluster, workers_node)
            leaders = Counter(cluster.leader(q) for q in WATCHED)
            recovered["the queues' leader"] = kill_and_restart(cluster, leaders.most_common(1)[0][0])
            time.sleep(5)
            feeder.stopping.set()
            feeder.join(30)
            last = freeze()
            wait_for(lambda: recorded_last() == last, "every slot claimed recorded", timeout=60)
            unsent = Event.select().where(Event.sent_at.is_null())
            wait_for(lambda: not unsent.exists(), "every event sent (the outbox's sweep)", timeout=150)
            wait_for(
                lambda: (
                    not Notification.select().where(Notification.status != "sent").exists()
                    and set(ready_counts(on_cluster, WATCHED).values()) == {0}
                ),
                "every notification sent, every queue empty",
                timeout=120,
            )
            assert workers.process.poll() is None, workers.output[-3000:]
            for process in (workers, scheduler):  # expected failures are WARNING lines, no traceback
                loud = [
                    line
                    for line in process.lines
                    if "Traceback" in line or '"level": "critical"' in line or '"level": "error"' in line
                ]
                assert not loud, "".join(loud)
            delivered = Counter(m.headers["x-pulse-delivery"] for m in vendors.attempts("webhook"))
        finally:
            feeder.stopping.set()
            dramatiq.set_broker(previous)
            broker.close()
            workers.stop()
            scheduler.stop()

    assert all(back < BACK_WITHIN for back in recovered.values()), recovered
    checks = list(UptimeCheck.select().order_by(UptimeCheck.component, UptimeCheck.scheduled_at))
    assert len({(c.component_id, c.scheduled_at) for c in checks}) == len(checks)
    for component in Component.select():
        slots = [c.scheduled_at for c in checks if c.component_id == component.id]
        assert all(b - a == timedelta(seconds=INTERVAL) for a, b in itertools.pairwise(slots)), slots  # no gap
        assert slots[-1] == last[component.id]  # the last claimed, recorded
    assert len(delivered) == Notification.select().count() and max(delivered.values()) == 1
