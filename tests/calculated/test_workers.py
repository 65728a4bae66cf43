"""Calculated metrics end to end: real `dramatiq` workers, a real Prometheus and an HTTP target.
A metrics query and a value extracted by uptime checks feed a formula; a change of either
recalculates it; its value drives a component; an input that stops coming in shows as stale."""

import json

from pulse import configfile
from pulse.models import (
    CalculatedMetric,
    CalculatedMetricDataPoint,
    Component,
    ExtractedValueDataPoint,
    MetricDataPoint,
)
from tests.support.cli import pulse
from tests.support.wait import wait_for

FILE = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {{key: api, name: API, url: "{url}", interval: 15s, extract: {{requests: "[BODY].requests"}}}}
      - {{key: errors, name: Error rate, type: metric}}
    integrations:
      - {{key: prom, type: prometheus, url: "{prometheus}"}}
    metrics:
      - {{key: http-errors, name: HTTP errors, integration: prom, query: "max(pulse_test_errors)", interval: 15s}}
    calculated_metrics:
      - key: error-rate
        name: Error rate
        formula: "errors / requests * 100"
        variables: {{errors: {{metric: http-errors}}, requests: {{extracted: api/requests}}}}
        max_age: 30s
        unit: "%"
        thresholds: {{critical: 5}}
        component: errors
"""


def rate():
    return CalculatedMetric.get(CalculatedMetric.key == "error-rate")


def test_sources_feed_a_formula_that_drives_a_component_and_goes_stale(database, rabbit, workers, prometheus, target):
    target.answer("/health", body=json.dumps({"requests": 200}).encode(), headers={"Content-Type": "application/json"})
    prometheus.set("pulse_test_errors", a=3)
    configfile.apply(configfile.load(FILE.format(url=target.url("/health"), prometheus=prometheus.url)))
    workers(threads=4)  # and its loops: uptime, metrics, calculated metrics

    wait_for(lambda: rate().last_value == 1.5, "the first value", timeout=60)
    assert Component.get(Component.key == "errors").status == "OPERATIONAL"

    prometheus.set("pulse_test_errors", a=20)  # 10 %: past the critical threshold
    wait_for(lambda: rate().last_value == 10.0, "the new value", timeout=40)
    wait_for(lambda: Component.get(Component.key == "errors").status == "MAJOR_OUTAGE", "the outage", timeout=10)
    # Every evaluation came from a new value of a source (or from apply): none from nothing.
    updates = MetricDataPoint.select().count() + ExtractedValueDataPoint.select().count()
    assert 2 <= CalculatedMetricDataPoint.select().count() <= updates + 1

    prometheus.set("pulse_test_errors")  # the series is gone: polls find no data
    wait_for(lambda: rate().state == "stale", "the stale input", timeout=60)
    assert rate().last_value is None and "input errors (metric http-errors) is" in rate().last_note
    listed = pulse("calculated", "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    errors, requests = row["inputs"]
    assert (row["state"], errors["name"], errors["stale"], requests["name"], requests["stale"]) == (
        "stale",
        "errors",
        True,
        "requests",
        False,
    )
    assert errors["age_seconds"] >= 30 and errors["value"] == 20.0
    table = pulse("calculated", "acme")
    assert table.returncode == 0 and "acme/error-rate" in table.stdout and "stale" in table.stdout
