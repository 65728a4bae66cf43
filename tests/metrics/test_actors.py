"""The poll actor on dramatiq's StubBroker: a vendor that keeps failing, and one that rate-limits."""

from datetime import UTC, datetime

from actors import metrics
from pulse import configfile
from pulse.models import FailedMessage, Integration, MetricDataPoint, MetricsQuery
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
