"""A batch of calculated metrics due together, evaluated by one message (`recalculate_all`): each
metric recorded as a message of its own would record it, once; a gone metric, a formula with no
value or an evaluation that fails leaves the others recorded."""

import logging
from datetime import timedelta

import pytest

from actors.calculated import recalculate_all
from pulse import configfile
from pulse.calculated import due, record
from pulse.db import db
from pulse.errors import PermanentError
from pulse.metrics import poll
from pulse.metrics.integrations import Sample
from pulse.models import CalculatedMetric, CalculatedMetricDataPoint, Component, MetricsQuery, utcnow

FILE = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {key: load, name: Load, type: metric}
    integrations:
      - {key: prom, type: prometheus, url: "http://127.0.0.1:9"}
    metrics:
      - {key: a, name: A, integration: prom, query: a, interval: 30s}
      - {key: b, name: B, integration: prom, query: b, interval: 30s}
      - {key: zero, name: Zero, integration: prom, query: zero, interval: 30s}
    calculated_metrics:
      - {key: sum, name: Sum, formula: "a + b", variables: {a: {metric: a}, b: {metric: b}}}
      - {key: ratio, name: Ratio, formula: "a / z", variables: {a: {metric: a}, z: {metric: zero}}}
      - key: load
        name: Load
        formula: "a * b"
        variables: {a: {metric: a}, b: {metric: b}}
        thresholds: {critical: 10}
        component: load
      - {key: product, name: Product, formula: "a * b", variables: {a: {metric: a}, b: {metric: b}}}
"""


@pytest.fixture
def claimed(database, rabbit):
    """Every metric claimed with its sources polled: the batch the loop would send."""
    configfile.apply(configfile.load(FILE))
    now = utcnow()
    for key, value in (("a", 6.0), ("b", 2.0), ("zero", 0.0)):
        query = MetricsQuery.get(MetricsQuery.key == key)
        poll.record(poll.load(query.id, now), now, Sample(value, None))
    with db.atomic():
        rows = due.claim(utcnow() + timedelta(seconds=30))
    assert len(rows) == 4
    return [[metric_id, due_at.isoformat()] for metric_id, due_at in rows]


def metric(key):
    return CalculatedMetric.get(CalculatedMetric.key == key)


def points():
    return sorted((p.calculated_metric.key, p.value) for p in CalculatedMetricDataPoint.select())


def test_a_batch_records_each_metric_once_a_formula_with_no_value_among_them(claimed):
    recalculate_all.fn(claimed)
    recalculate_all.fn(claimed)  # redelivered: nothing twice
    assert points() == [("load", 12.0), ("product", 12.0), ("ratio", None), ("sum", 8.0)]
    assert (metric("ratio").state, metric("ratio").last_note) == ("no_data", "division by zero (char 3)")
    assert (metric("sum").state, metric("sum").last_value) == ("ok", 8.0)
    assert CalculatedMetric.select().where(CalculatedMetric.sent_at.is_null(False)).count() == 0
    assert metric("load").state == "critical"
    assert Component.get(Component.key == "load").status == "MAJOR_OUTAGE"


def test_a_gone_metric_is_skipped_and_the_others_recorded(claimed, caplog):
    gone = metric("sum")
    CalculatedMetric.delete().where(CalculatedMetric.id == gone.id).execute()
    with caplog.at_level(logging.INFO, logger="pulse.calculated.record"):
        recalculate_all.fn(claimed)
    assert points() == [("load", 12.0), ("product", 12.0), ("ratio", None)]
    assert f"Calculated metric {gone.id} is gone: evaluation skipped." in caplog.messages


def test_an_evaluation_that_fails_is_raised_after_the_others_are_recorded(claimed, monkeypatch):
    evaluation = record.evaluation

    def failing(loaded, now):
        if loaded.key == "product":
            raise RuntimeError("a bug")
        return evaluation(loaded, now)

    monkeypatch.setattr(record, "evaluation", failing)
    with pytest.raises(RuntimeError, match="a bug"):
        recalculate_all.fn(claimed)
    assert points() == [("load", 12.0), ("ratio", None), ("sum", 8.0)]

    monkeypatch.setattr(record, "evaluation", evaluation)
    recalculate_all.fn(claimed)  # the retry evaluates only what is not recorded
    assert points() == [("load", 12.0), ("product", 12.0), ("ratio", None), ("sum", 8.0)]


@pytest.mark.parametrize("batch", [[[1]], [["1", "2026-01-01T00:00:00+00:00"]], [[1, "yesterday"]], {"1": "x"}])
def test_a_batch_of_anything_but_pairs_is_refused_for_good(batch):
    with pytest.raises(PermanentError):
        recalculate_all.fn(batch)
