"""Calculated metrics evaluated (`recalculate_all`) when their sources change: marked by the statement
that stores a poll or a check, coalesced, claimed in dependency order; values, no-value reasons,
staleness, and the status of the component a metric drives."""

import json
import re
from datetime import timedelta

import pytest

from actors.calculated import recalculate, recalculate_all
from actors.uptime import check
from pulse import configfile
from pulse.calculated import due
from pulse.db import db
from pulse.metrics import poll
from pulse.metrics.integrations import Sample
from pulse.models import CalculatedMetric, CalculatedMetricDataPoint, Component, Event, MetricsQuery, utcnow
from pulse.models.event import INCIDENT_OPENED

START = utcnow()

FILE = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {{key: api, name: API, url: "{url}", interval: 30s, extract: {{requests: "[BODY].requests"}}}}
      - {{key: errors, name: Errors, type: metric}}
    integrations:
      - {{key: prom, type: prometheus, url: "http://127.0.0.1:9"}}
    metrics:
      - {{key: http-errors, name: HTTP errors, integration: prom, query: errors, interval: 30s}}
    calculated_metrics:
      - key: error-rate
        name: Error rate
        formula: "errors / requests * 100"
        variables: {{errors: {{metric: http-errors}}, requests: {{extracted: api/requests}}}}
        max_age: 5m
        unit: "%"
        thresholds: {{critical: 5}}
        component: errors
      - key: doubled
        name: Doubled
        formula: "rate * 2 + errors"
        variables: {{rate: {{calculated: error-rate}}, errors: {{metric: http-errors}}}}
"""


@pytest.fixture
def applied(database, rabbit, target):
    configfile.apply(configfile.load(FILE.format(url=target.url("/health"))))
    evaluate_due()  # the first evaluations, marked by apply: the sources have no value yet
    return target


@pytest.fixture(autouse=True)
def start():
    """The test's own now, to the second: every slot is counted from it."""
    global START
    START = utcnow().replace(microsecond=0)


def slot(seconds_ago: float = 0):
    return START - timedelta(seconds=seconds_ago)


def polled(value, at):
    query = MetricsQuery.get(MetricsQuery.key == "http-errors")
    poll.record(poll.load(query.id, at), at, Sample(value, None))


def checked(target, requests, at):
    target.answer(
        "/health", body=json.dumps({"requests": requests}).encode(), headers={"Content-Type": "application/json"}
    )
    check.fn(Component.get(Component.key == "api").id, at.isoformat())


def evaluate_due():
    """Claim and evaluate what is due (quiet periods skipped) until nothing is: the keys of each
    round's evaluations."""
    rounds = []
    while True:
        with db.atomic():
            claimed = due.claim(utcnow() + timedelta(seconds=2))
        if not claimed:
            return rounds
        recalculate_all.fn([[metric_id, due_at.isoformat()] for metric_id, due_at in claimed])  # as the loop sends them
        rounds.append(sorted(CalculatedMetric.get_by_id(i).key for i, _ in claimed))


def metric(key):
    return CalculatedMetric.get(CalculatedMetric.key == key)


def points(key):
    return list(CalculatedMetricDataPoint.select().where(CalculatedMetricDataPoint.calculated_metric == metric(key)))


def test_a_missing_input_is_no_value_with_its_name(applied):
    rate = metric("error-rate")
    assert (rate.state, rate.last_value, rate.last_note) == (
        "no_data",
        None,
        "input errors (metric http-errors) has no value",
    )
    assert metric("doubled").last_note == (
        "input rate (calculated error-rate) has no value: input errors (metric http-errors) has no value"
    )
    assert [p.value for p in points("error-rate")] == [None]


def test_a_change_of_either_source_recalculates_in_dependency_order(applied):
    polled(3, slot())
    checked(applied, 200, slot())
    assert metric("error-rate").pending_since is not None and metric("doubled").pending_since is not None
    assert evaluate_due() == [["error-rate"], ["doubled"]]  # doubled waits for the rate it reads
    rate, doubled = metric("error-rate"), metric("doubled")
    assert (rate.state, rate.last_value, rate.last_value_at) == ("ok", 1.5, slot())
    assert (doubled.last_value, doubled.last_note) == (1.5 * 2 + 3, None)

    checked(applied, 100, slot() + timedelta(seconds=30))
    assert evaluate_due() == [["error-rate"], ["doubled"]]
    assert (metric("error-rate").last_value, metric("doubled").last_value) == (3.0, 9.0)
    assert [p.value for p in points("error-rate")] == [None, 1.5, 3.0]


def test_a_burst_of_updates_is_one_evaluation_with_the_latest_inputs(applied):
    checked(applied, 1000, slot())
    start = slot() - timedelta(seconds=100)
    for n in range(20):
        polled(n, start + timedelta(seconds=5 * n))
    pending = metric("error-rate")
    assert pending.due_at - pending.pending_since <= timedelta(seconds=20)
    assert evaluate_due() == [["error-rate"], ["doubled"]]
    assert [p.value for p in points("error-rate")] == [None, 1.9]


def test_a_redelivered_evaluation_writes_nothing_twice(applied):
    polled(3, slot())
    checked(applied, 200, slot())
    with db.atomic():
        [(rate_id, due_at), *_] = due.claim(utcnow() + timedelta(seconds=2))
    for _ in range(2):
        recalculate.fn(rate_id, due_at.isoformat())  # a message of one, as the loop sent before it batched
    assert len(points("error-rate")) == 2  # the first evaluation's (no value) and this one
    assert metric("error-rate").sent_at is None


def test_an_input_older_than_max_age_is_stale_and_says_which(applied):
    polled(3, slot(6 * 60))
    checked(applied, 200, slot())
    evaluate_due()
    rate = metric("error-rate")
    assert (rate.state, rate.last_value) == ("stale", None)
    assert re.fullmatch(r"input errors \(metric http-errors\) is 6m[0-9]s old, older than max_age 5m", rate.last_note)
    assert rate.due_at is None  # nothing to wait for: the next poll marks it


def test_a_metric_is_due_again_when_its_oldest_input_grows_stale(applied):
    polled(3, slot(60))
    checked(applied, 200, slot())
    evaluate_due()
    rate = metric("error-rate")
    assert (rate.state, rate.pending_since, rate.due_at) == ("ok", None, slot(60) + timedelta(minutes=5))

    recalculate_all.fn([[rate.id, rate.due_at.isoformat()]])  # as the loop sends it when it comes due
    assert metric("error-rate").state == "stale"
    assert metric("doubled").pending_since is not None  # what it reads changed: marked
    assert evaluate_due() == [["doubled"]]
    assert metric("doubled").state == "no_data"


def test_division_by_zero_is_no_value_with_the_reason(applied):
    polled(3, slot())
    checked(applied, 0, slot())
    evaluate_due()
    rate = metric("error-rate")
    assert (rate.state, rate.last_value, rate.last_note) == ("no_data", None, "division by zero (char 8)")
    assert Component.get(Component.key == "errors").status == "OPERATIONAL"  # no_data: keep


def test_a_value_past_its_threshold_changes_the_component_and_opens_an_incident(applied):
    polled(10, slot())
    checked(applied, 100, slot())
    evaluate_due()
    assert metric("error-rate").state == "critical"
    component = Component.get(Component.key == "errors")
    assert component.status == "MAJOR_OUTAGE"
    [opened] = Event.select().where(Event.type == INCIDENT_OPENED)
    assert opened.component_id == component.id


def test_a_source_without_calculated_metrics_marks_nothing(applied):
    CalculatedMetric.delete().execute()
    polled(3, slot())
    assert due.next_due() is None


def test_only_a_new_latest_value_marks_what_it_feeds(applied):
    def marked():
        return sorted(m.key for m in CalculatedMetric.select().where(CalculatedMetric.pending_since.is_null(False)))

    polled(3, slot(60))
    assert marked() == ["doubled", "error-rate"]
    CalculatedMetric.update(pending_since=None, due_at=None).execute()

    polled(None, slot(30))  # no data
    polled(4, slot(90))  # older than the latest poll applied
    query = MetricsQuery.get(MetricsQuery.key == "http-errors")
    poll.failed(poll.load(query.id, slot()), "boom")  # the query's row updated, its value not
    assert marked() == []

    polled(5, slot())
    assert marked() == ["doubled", "error-rate"]
