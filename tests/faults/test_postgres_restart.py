"""Drill 3: PostgreSQL restarts (`pg_ctlcluster ... restart`) while checks run.

"Nothing lost or written twice" here: the workers and the scheduler keep running; the checks and
events that hit the outage are retried and recorded (no message is dead-lettered); each slot has
one row; checks go on being scheduled after the restart; the outage's status changes reach the
webhook, each once. Metrics polls ride it out alike: one data point per slot, polled again after
the restart.
"""

from collections import Counter

import pytest

from pulse.models import Event, FailedMessage, MetricDataPoint, UptimeCheck, utcnow
from tests.support.channels import webhook_channel
from tests.support.metrics import newrelic_queries
from tests.support.newrelic import NewRelic
from tests.support.restarts import restart_postgres
from tests.support.vendors import Vendors
from tests.support.wait import wait_for

COMPONENTS, QUERIES = 5, 3


@pytest.mark.minutes
@pytest.mark.restarts
def test_workers_and_scheduler_ride_out_a_postgres_restart(make_component, target, workers, schedulers):
    components = [
        make_component(target, key=f"c{i}", interval_seconds=15, failure_threshold=1) for i in range(COMPONENTS)
    ]
    with Vendors() as vendors, NewRelic() as newrelic:
        webhook_channel(components[0].organization, vendors)
        newrelic_queries(components[0].organization, newrelic, QUERIES, interval_seconds=15)
        worker = workers(threads=8)
        scheduler = schedulers()
        wait_for(lambda: UptimeCheck.select().count() >= COMPONENTS, "the first checks", timeout=45)

        target.answer("/health", status=503, body=b"down")  # the next checks change every status...
        restart_postgres()  # ...while PostgreSQL goes away and comes back
        restarted = utcnow()

        wait_for(
            lambda: UptimeCheck.select().where(UptimeCheck.scheduled_at > restarted).count() >= 2 * COMPONENTS,
            "checks after the restart",
            timeout=60,
        )
        wait_for(
            lambda: MetricDataPoint.select().where(MetricDataPoint.scheduled_at > restarted).count() >= 2 * QUERIES,
            "polls after the restart",
        )
        wait_for(lambda: Event.select().count() >= 2 * COMPONENTS, "an outage and an incident per component")
        vendors.wait_received("webhook", Event.select().count(), timeout=60)
        delivered = Counter(m.headers["x-pulse-delivery"] for m in vendors.received("webhook"))
        assert worker.process.poll() is None and scheduler.process.poll() is None
        assert "uptime loop: OperationalError" in worker.output  # the loop met the outage and went on

    assert FailedMessage.select().count() == 0, [(f.actor_name, f.error_message) for f in FailedMessage.select()]
    slots = Counter((c.component_id, c.scheduled_at) for c in UptimeCheck.select())
    assert max(slots.values()) == 1
    assert Counter((e.component_id, e.type) for e in Event.select()).most_common(1)[0][1] == 1
    assert max(delivered.values()) == 1 and len(delivered) == Event.select().count()
    points = Counter((p.metrics_query_id, p.scheduled_at) for p in MetricDataPoint.select())
    assert max(points.values()) == 1
