"""A batch of polls due together, made by one message (`polls`) on dramatiq's StubBroker: each
query asked once per slot with its own request, what they found written together; one vendor's
failure leaves the others recorded, and its retry polls only what is not."""

from datetime import UTC, datetime

import pytest

from actors import metrics
from pulse import configfile
from pulse.errors import PermanentError
from pulse.models import FailedMessage, MetricDataPoint, MetricsQuery
from tests.support.stub import declare
from tests.support.target import HTTPTarget

SLOT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
FILE = """
organizations:
  - slug: acme
    name: Acme
    integrations:
      - {{key: good, type: prometheus, url: "{good}"}}
      - {{key: flaky, type: prometheus, url: "{flaky}"}}
      - {{key: bad, type: prometheus, url: "{bad}"}}
    metrics:
      - {{key: up, name: Up, integration: good, query: up}}
      - {{key: load, name: Load, integration: good, query: load}}
      - {{key: queue, name: Queue, integration: flaky, query: queue}}
      - {{key: typo, name: Typo, integration: bad, query: typo}}
"""
SEVEN = b'{"status": "success", "data": {"resultType": "scalar", "result": [1, "7"]}}'
UNAVAILABLE = b'{"status": "error", "errorType": "unavailable", "error": "storage is starting"}'
BAD = b'{"status": "error", "errorType": "bad_data", "error": "parse error"}'


@pytest.fixture
def vendors(database):
    with HTTPTarget() as good, HTTPTarget() as flaky, HTTPTarget() as bad:
        good.answer("/api/v1/query", body=SEVEN)
        flaky.answer("/api/v1/query", status=503, body=UNAVAILABLE)
        bad.answer("/api/v1/query", status=400, body=BAD)
        configfile.apply(configfile.load(FILE.format(good=good.url(), flaky=flaky.url(), bad=bad.url())))
        yield good, flaky, bad


def batch(*keys):
    return [[MetricsQuery.get(MetricsQuery.key == key).id, SLOT.isoformat()] for key in keys]


def points():
    return sorted((p.metrics_query.key, p.value) for p in MetricDataPoint.select())


def run(broker, worker):
    broker.join("metrics", fail_fast=False)
    worker.join()


def test_a_batch_asks_each_query_once_and_records_them_together(vendors, broker, stub_worker):
    good, _, _ = vendors
    polls = declare(broker, metrics.polls)
    for _ in range(2):  # the second time redelivered: nothing twice
        polls.send(batch("up", "load"))
        run(broker, stub_worker)
    assert points() == [("load", 7.0), ("up", 7.0)]
    assert len(good.received) == 2
    assert {q.key: q.state for q in MetricsQuery.select() if q.last_polled_at} == {"load": "ok", "up": "ok"}


def test_a_failing_vendor_leaves_the_others_recorded_and_only_its_polls_retried(vendors, broker, stub_worker, caplog):
    good, flaky, bad = vendors
    polls = declare(broker, metrics.polls, max_retries=1, min_backoff=10)
    polls.send(batch("up", "queue", "typo", "load"))
    run(broker, stub_worker)

    assert len(good.received) == 2  # the retry asked only the vendor that failed for a while
    assert len(flaky.received) == 2 and len(bad.received) == 1
    assert points() == [("load", 7.0), ("queue", None), ("typo", None), ("up", 7.0)]
    queue, typo = MetricsQuery.get(MetricsQuery.key == "queue"), MetricsQuery.get(MetricsQuery.key == "typo")
    assert (queue.state, queue.last_error) == ("no_data", "Prometheus answered 503: storage is starting")
    assert (typo.state, typo.last_error) == ("no_data", "Prometheus answered 400: parse error")
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and r.name == "pulse.metrics.poll"]
    assert warnings == [
        "Typo: Prometheus answered 400: parse error; recorded as no data.",  # its retry hides it from the dead letters
        f"Queue: Prometheus answered 503: storage is starting; recorded as no data for {SLOT.isoformat()}.",
    ]
    assert FailedMessage.select().count() == 0


def test_a_permanent_failure_alone_dead_letters_the_batch_after_recording_the_others(vendors, broker, stub_worker):
    polls = declare(broker, metrics.polls)
    polls.send(batch("up", "typo"))
    run(broker, stub_worker)
    assert points() == [("typo", None), ("up", 7.0)]
    [failed] = FailedMessage.select()
    assert "Prometheus answered 400: parse error" in failed.error_message


def test_a_message_of_one_poll_from_the_previous_version_is_still_polled(vendors, broker, stub_worker):
    poll = declare(broker, metrics.poll)
    [[query_id, slot]] = batch("up")
    poll.send(query_id, slot)
    run(broker, stub_worker)
    assert points() == [("up", 7.0)]


@pytest.mark.parametrize("given", [[[1]], [["1", SLOT.isoformat()]], [[1, "noon"]], {"1": "x"}])
def test_a_batch_of_anything_but_pairs_is_refused_for_good(given):
    with pytest.raises(PermanentError):
        metrics.polls.fn(given)
