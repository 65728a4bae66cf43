"""A poll of a metrics query against a real Prometheus: its data point, its state, and the status
of the component it drives, through the same state machine as uptime checks."""

from datetime import UTC, datetime, timedelta

import pytest

from actors.metrics import poll
from pulse import configfile
from pulse.errors import PermanentError
from pulse.models import Component, Event, Incident, Integration, MetricDataPoint, MetricsQuery
from pulse.models.event import INCIDENT_OPENED, INCIDENT_RESOLVED, STATUS_CHANGED

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

FILE = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {{key: latency, name: API latency, type: metric}}
    integrations:
      - {{key: prom, type: prometheus, url: "{url}"}}
    metrics:
      - key: api-latency
        name: API latency
        integration: prom
        query: {query}
        interval: 30s
        unit: ms
        thresholds: {{direction: above, warning: 300, critical: 800, for: 2, recover: 2}}
        no_data: {no_data}
        component: latency
"""


@pytest.fixture
def metric(database, prometheus):
    def configure(query="max(pulse_test_latency_ms)", no_data="keep"):
        configfile.apply(configfile.load(FILE.format(url=prometheus.url, query=query, no_data=no_data)))
        return MetricsQuery.get()

    return configure


def run(metric, n):
    poll.fn(metric.id, (T0 + timedelta(seconds=30 * n)).isoformat())
    return MetricsQuery.get_by_id(metric.id), Component.get_by_id(metric.component_id)


def test_a_poll_records_its_value_and_state(metric, prometheus):
    query, component = run(metric(), 0)

    [point] = MetricDataPoint.select()
    assert (point.scheduled_at, point.value) == (T0, 120.0)
    assert (query.state, query.last_value, query.last_value_at, query.last_polled_at) == ("ok", 120.0, T0, T0)
    assert component.status == "OPERATIONAL"


def test_a_redelivered_poll_writes_nothing_twice(metric, prometheus):
    created = metric()
    run(created, 0)
    prometheus.set("pulse_test_latency_ms", a=900)
    run(created, 0)  # the same message again

    assert [p.value for p in MetricDataPoint.select()] == [120.0]
    assert MetricsQuery.get().last_value == 120.0


def test_a_late_poll_keeps_its_point_and_changes_nothing(metric, prometheus):
    created = metric()
    run(created, 1)
    prometheus.set("pulse_test_latency_ms", a=900)
    query, component = run(created, 0)  # an earlier slot, polled late (a retried message)

    assert sorted(p.value for p in MetricDataPoint.select()) == [120.0, 900.0]
    assert (query.state, query.last_value, query.last_polled_at) == ("ok", 120.0, T0 + timedelta(seconds=30))
    assert (component.status, component.consecutive_failures, Event.select().count()) == ("OPERATIONAL", 0, 0)


def test_a_query_driving_no_component_keeps_its_last_value_through_no_data(metric, prometheus):
    created = metric(query="max(pulse_test_latency_ms) < 800")  # no series from 800 on
    MetricsQuery.update(component=None).execute()
    run(created, 0)
    prometheus.set("pulse_test_latency_ms", a=950)
    query, _ = run(created, 1)

    assert (query.state, query.last_polled_at) == ("no_data", T0 + timedelta(seconds=30))
    assert (query.last_value, query.last_value_at) == (120.0, T0)
    assert [p.value for p in MetricDataPoint.select().order_by(MetricDataPoint.id)] == [120.0, None]


def test_thresholds_change_the_status_after_for_polls_and_open_an_incident(metric, prometheus):
    created = metric()
    prometheus.set("pulse_test_latency_ms", a=500)
    query, component = run(created, 0)
    assert (query.state, component.status) == ("warning", "OPERATIONAL")  # one poll: not yet
    query, component = run(created, 1)
    assert (query.state, component.status) == ("warning", "DEGRADED_PERFORMANCE")

    prometheus.set("pulse_test_latency_ms", a=950)
    run(created, 2)
    query, component = run(created, 3)
    assert (query.state, component.status) == ("critical", "MAJOR_OUTAGE")
    incident = Incident.get()
    assert incident.title == "API latency is down" and incident.resolved_at is None
    changed = Event.select().where(Event.type == STATUS_CHANGED).order_by(Event.id)
    assert [e.payload["reason"] for e in changed][-1] == "API latency is 950ms, above its critical threshold 800ms"

    prometheus.set("pulse_test_latency_ms", a=100)
    run(created, 4)
    query, component = run(created, 5)
    assert (query.state, component.status) == ("ok", "OPERATIONAL")
    assert Incident.get().resolved_at is not None
    assert [e.type for e in Event.select().order_by(Event.id)] == [
        STATUS_CHANGED,
        STATUS_CHANGED,
        INCIDENT_OPENED,
        STATUS_CHANGED,
        INCIDENT_RESOLVED,
    ]


def test_no_data_keeps_the_status_and_starts_the_good_streak_over(metric, prometheus):
    created = metric(query="max(pulse_test_latency_ms) / (max(pulse_test_latency_ms) < 800)")  # none below 800
    prometheus.set("pulse_test_latency_ms", a=950)
    run(created, 0)
    run(created, 1)
    assert Component.get().status == "OPERATIONAL"  # no data twice: never a failure...

    Component.update(status="MAJOR_OUTAGE", consecutive_successes=1).execute()
    query, component = run(created, 2)
    assert (query.state, component.status, component.consecutive_successes) == ("no_data", "MAJOR_OUTAGE", 0)
    assert [p.value for p in MetricDataPoint.select().order_by(MetricDataPoint.id)] == [None, None, None]


def test_no_data_may_be_an_outage(metric, prometheus):
    created = metric(query="pulse_no_such_metric", no_data="outage")
    run(created, 0)
    query, component = run(created, 1)

    assert (query.state, component.status) == ("no_data", "MAJOR_OUTAGE")
    assert (
        Event.get(Event.type == STATUS_CHANGED).payload["reason"]
        == "API latency: no data (the query returned no series)"
    )


def test_a_bad_query_is_dead_lettered_shown_on_the_query_and_its_integration_and_no_data(metric, prometheus):
    created = metric(query="'sum('", no_data="outage")

    with pytest.raises(PermanentError, match="Prometheus answered 400"):
        run(created, 0)

    query = MetricsQuery.get()
    assert "parse error" in query.last_error and "parse error" in Integration.get().last_error
    assert [p.value for p in MetricDataPoint.select()] == [None]
    assert query.state == "no_data" and Component.get().consecutive_failures == 1
