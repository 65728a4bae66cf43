"""Drill 6: two schedulers (`periodiq pulse.actors` twice) across three minute ticks.

"Nothing doubled" here: every tick is sent twice, yet each slot of each component is checked
once (one request to the target per recorded check, slots 15 s apart without a gap), each status
change makes one event, and each event one delivery; each slot of each metrics query is polled
once too (one request to the vendor per data point, slots 15 s apart without a gap).
"""

import itertools
from collections import Counter
from datetime import timedelta

import pytest

from pulse.models import Event, MetricDataPoint, MetricsQuery, UptimeCheck
from pulse.models.event import INCIDENT_OPENED, STATUS_CHANGED
from tests.support.channels import webhook_channel
from tests.support.metrics import newrelic_queries
from tests.support.newrelic import NewRelic
from tests.support.vendors import Vendors
from tests.support.wait import wait_for

COMPONENTS, QUERIES = 5, 3


def ticks(scheduler):
    return scheduler.output.count("Scheduling Actor(heartbeat_tick) at")


@pytest.mark.minutes
def test_two_schedulers_double_no_check_and_no_event(make_component, target, workers, schedulers):
    components = [make_component(target, key=f"c{i}", interval_seconds=15) for i in range(COMPONENTS)]
    organization = components[0].organization
    with Vendors() as vendors, NewRelic() as newrelic:
        newrelic_queries(organization, newrelic, QUERIES, interval_seconds=15)
        webhook_channel(organization, vendors)
        worker = workers(threads=8)
        both = [schedulers(), schedulers()]
        wait_for(lambda: UptimeCheck.select().count() >= 2 * COMPONENTS, "two rounds of checks", timeout=60)
        target.answer("/health", status=503, body=b"down")  # three failures later: an outage, an incident
        wait_for(lambda: all(ticks(s) >= 3 for s in both), "three ticks of each scheduler", timeout=150)
        wait_for(lambda: Event.select().count() == 2 * COMPONENTS, "a change and an incident per component")
        vendors.wait_received("webhook", 2 * COMPONENTS)
        for process in (*both, worker):  # the worker's loops check until it stops
            process.stop()
        requests_made = len(target.received)
        wait_for(
            lambda: len(newrelic.requests) == MetricDataPoint.select().count() >= 4 * QUERIES,
            "one request to the vendor per data point",
        )
        delivered = Counter(m.headers["x-pulse-delivery"] for m in vendors.received("webhook"))

    checks = list(UptimeCheck.select().order_by(UptimeCheck.component, UptimeCheck.scheduled_at))
    assert requests_made == len(checks)  # no slot was checked twice
    for component in components:
        slots = [c.scheduled_at for c in checks if c.component_id == component.id]
        assert all(b - a == timedelta(seconds=15) for a, b in itertools.pairwise(slots)), slots
    kinds = Counter((e.component_id, e.type) for e in Event.select())
    assert kinds == Counter({(c.id, kind): 1 for c in components for kind in (STATUS_CHANGED, INCIDENT_OPENED)})
    assert len(delivered) == 2 * COMPONENTS and max(delivered.values()) == 1
    points = list(MetricDataPoint.select().order_by(MetricDataPoint.metrics_query, MetricDataPoint.scheduled_at))
    for query in MetricsQuery.select():
        slots = [p.scheduled_at for p in points if p.metrics_query_id == query.id]
        assert all(b - a == timedelta(seconds=15) for a, b in itertools.pairwise(slots)), slots
