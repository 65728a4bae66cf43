"""The poll actor on dramatiq's StubBroker: a vendor that keeps failing, one that rate-limits, and
hostile replies, down to what reaches a subscriber."""

import dataclasses
import json
from datetime import UTC, datetime

import pytest

from actors import metrics, notifications, oncall
from pulse import configfile
from pulse.metrics.integrations import INTEGRATIONS
from pulse.models import Component, FailedMessage, IncidentUpdate, Integration, MetricDataPoint, MetricsQuery
from tests.support import hostile
from tests.support.prometheus import PrometheusApi
from tests.support.stub import declare
from tests.support.target import HTTPTarget
from tests.support.wait import wait_for

SLOT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
FILE = """
organizations:
  - slug: acme
    name: Acme
    integrations:
      - {{key: prom, type: prometheus, url: "{url}"}}
    metrics:
      - {{key: up, name: Up, integration: prom, query: up}}
"""
ERROR = b'{"status": "error", "errorType": "unavailable", "error": "storage is starting"}'


def run(broker, worker):
    broker.join("metrics", fail_fast=False)
    worker.join()


def test_a_vendor_still_failing_at_the_last_retry_gives_no_data_not_a_dead_letter(database, broker, stub_worker):
    poll = declare(broker, metrics.poll, max_retries=1, min_backoff=10)
    with HTTPTarget() as prometheus:
        prometheus.answer("/api/v1/query", status=503, body=ERROR)
        configfile.apply(configfile.load(FILE.format(url=prometheus.url())))

        poll.send(MetricsQuery.get().id, SLOT.isoformat())
        run(broker, stub_worker)

        assert len(prometheus.received) == 2  # the attempt and its retry
    [point] = MetricDataPoint.select()
    assert (point.scheduled_at, point.value) == (SLOT, None)
    query = MetricsQuery.get()
    assert (query.state, query.last_error) == ("no_data", "Prometheus answered 503: storage is starting")
    assert Integration.get().last_error == "Prometheus answered 503: storage is starting"
    assert FailedMessage.select().count() == 0


def test_a_rate_limited_poll_comes_back_when_the_vendor_says(database, broker, stub_worker):
    poll = declare(broker, metrics.poll)
    with HTTPTarget() as prometheus:
        prometheus.answer("/api/v1/query", status=429, body=b"", headers={"Retry-After": "1"})
        configfile.apply(configfile.load(FILE.format(url=prometheus.url())))

        poll.send(MetricsQuery.get().id, SLOT.isoformat())
        wait_for(lambda: prometheus.received, "the first attempt")  # its retry waits in the delay queue
        prometheus.answer(
            "/api/v1/query", body=b'{"status": "success", "data": {"resultType": "scalar", "result": [1, "7"]}}'
        )
        run(broker, stub_worker)

    assert [p.value for p in MetricDataPoint.select()] == [7.0]
    [(_, delay)] = [(m, d) for m, d in broker.enqueued if d]
    assert 1000 <= delay <= 1100


WATCHED = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {{key: latency, name: API latency, type: metric}}
    integrations:
      - {{key: prom, type: prometheus, url: "{url}", username: {username}, password: '{password}'}}
    metrics:
      - key: api-latency
        name: API latency
        integration: prom
        query: pulse_latency_ms
        thresholds: {{critical: 800, for: 1}}
        no_data: outage
        component: latency
    subscribers:
      - {{webhook: "{hook}", components: [latency]}}
"""


@pytest.fixture
def prometheus():
    with PrometheusApi() as fake:
        yield fake


def watched(prometheus, vendors):
    """A query of ``prometheus`` that drives a component (no data is an outage) a webhook subscribes to."""
    hook = vendors.webhook_receiver()
    text = WATCHED.format(url=prometheus.url, username=prometheus.username, password=prometheus.password, hook=hook)
    configfile.apply(configfile.load(text))
    return MetricsQuery.get()


@pytest.mark.parametrize("status", [200, 503])
def test_a_subscriber_never_reads_what_the_vendor_said(database, broker, stub_worker, vendors, prometheus, status):
    """The vendor's text, credentials and all, stays with operators: a subscriber reads "no data
    (Prometheus unavailable)"."""
    poll = declare(broker, metrics.poll, max_retries=0)
    for actor in (notifications.broadcast, notifications.send, oncall.alert):
        declare(broker, actor)
    seen = []

    def repeat(headers):
        seen.extend(hostile.credentials(headers))
        return status, {"status": "error", "errorType": "unavailable", "error": hostile.echo(headers)}, {}

    prometheus.forge = repeat
    query = watched(prometheus, vendors)

    poll.send(query.id, SLOT.isoformat())
    run(broker, stub_worker)
    for queue in ("notifications", "oncall"):
        broker.join(queue, fail_fast=False)
    stub_worker.join()

    [point] = MetricDataPoint.select()
    assert (point.scheduled_at, point.value) == (SLOT, None)
    assert Component.get().status == "MAJOR_OUTAGE"
    delivered = {json.loads(r.body)["type"]: r.body.decode() for r in vendors.received("webhook")}
    assert set(delivered) == {"component.status_changed", "incident.opened"}
    assert json.loads(delivered["component.status_changed"])["summary"] == (
        "API latency went from operational to major outage. API latency: no data (Prometheus unavailable)"
    )
    [opened] = IncidentUpdate.select()
    assert opened.message == "API latency: no data (Prometheus unavailable)"
    error = MetricsQuery.get().last_error
    assert "upstream refused the request with *** and *** and *** and ***" in error and len(error) < 400
    for text in (*delivered.values(), error, Integration.get().last_error):
        assert not any(secret in text for secret in seen)
    assert broker.dead_letters == []


BIG = {"status": "success", "data": {"resultType": "vector", "result": [{"value": [1, hostile.BIG]}]}}


@pytest.mark.parametrize(
    ("reply", "error", "dead"),
    [
        ((200, hostile.DEEP, {}), "Prometheus answered something that is not its API's JSON", 1),
        ((429, b"", {"Retry-After": "soon"}), "Prometheus answered 429", 0),
        ((200, BIG, {}), None, 0),  # the value is +Inf
    ],
)
def test_a_hostile_reply_ends_as_no_data_with_its_reason(database, broker, stub_worker, prometheus, reply, error, dead):
    poll = declare(broker, metrics.poll, max_retries=0)
    prometheus.forge = lambda headers: reply
    credentials = f"username: {prometheus.username}, password: '{prometheus.password}', url:"
    configfile.apply(configfile.load(FILE.format(url=prometheus.url).replace("url:", credentials)))

    poll.send(MetricsQuery.get().id, SLOT.isoformat())
    run(broker, stub_worker)

    [point] = MetricDataPoint.select()
    assert (point.scheduled_at, point.value) == (SLOT, None)
    query = MetricsQuery.get()
    assert (query.state, query.last_error) == ("no_data", error)
    assert FailedMessage.select().count() == dead


def test_a_bug_reading_a_reply_still_ends_the_slot_as_no_data(database, broker, stub_worker, monkeypatch):
    def broken(settings, text, options, policy, timeout_s):
        raise KeyError("a bug")

    monkeypatch.setitem(INTEGRATIONS, "prometheus", dataclasses.replace(INTEGRATIONS["prometheus"], query=broken))
    poll = declare(broker, metrics.poll, max_retries=1, min_backoff=10)
    configfile.apply(configfile.load(FILE.format(url="http://127.0.0.1:9")))

    poll.send(MetricsQuery.get().id, SLOT.isoformat())
    run(broker, stub_worker)

    assert [p.value for p in MetricDataPoint.select()] == [None]
    query = MetricsQuery.get()
    assert (query.state, query.last_error) == ("no_data", "internal error (see the worker's log)")
    assert FailedMessage.get().error_type == "KeyError"
