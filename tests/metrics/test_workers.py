"""The metrics worker end to end: real `dramatiq` and a real Prometheus; the workers' loop sends
each query's polls at their slots, and a value past its threshold changes the component's
status; `pulse metrics` shows it."""

import json

from pulse import configfile
from pulse.models import Component, Event, MetricDataPoint
from pulse.models.event import INCIDENT_OPENED
from tests.support.cli import pulse
from tests.support.wait import wait_for

FILE = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {{key: latency, name: API latency, type: metric}}
    integrations:
      - {{key: prom, type: prometheus, url: "{url}"}}
    metrics:
      - {{key: api-latency, name: API latency, integration: prom, query: "max(pulse_test_latency_ms)", interval: 15s,
          unit: ms, thresholds: {{critical: 800}}, component: latency}}
"""


def test_polls_come_at_their_slots_and_a_critical_value_is_an_outage(database, rabbit, workers, prometheus):
    configfile.apply(configfile.load(FILE.format(url=prometheus.url)))
    prometheus.set("pulse_test_latency_ms", a=950)
    workers(threads=1)  # the loop runs beside its one thread

    wait_for(lambda: Component.get().status == "MAJOR_OUTAGE", "the outage", timeout=40)
    assert Event.select().where(Event.type == INCIDENT_OPENED).count() == 1
    [point] = MetricDataPoint.select()
    assert point.value == 950.0

    listed = pulse("metrics", "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert (row["organization"], row["key"], row["state"], row["last_value"], row["integration"]) == (
        "acme",
        "api-latency",
        "critical",
        950.0,
        "prom",
    )
    table = pulse("metrics", "acme")
    assert table.returncode == 0 and "acme/api-latency" in table.stdout and "950ms" in table.stdout


def test_pulse_metrics_query_runs_one_query_now(database, prometheus):
    configfile.apply(configfile.load(FILE.format(url=prometheus.url)))
    prometheus.set("pulse_test_latency_ms", a=80, b=220)

    maximum = pulse("metrics", "query", "prom", "pulse_test_latency_ms", "--aggregate", "max")
    assert (maximum.returncode, maximum.stdout) == (0, "220  (max of 2 series)\n")
    nothing = pulse("metrics", "query", "acme/prom", "pulse_no_such_metric", "--json")
    assert (nothing.returncode, json.loads(nothing.stdout)) == (
        1,
        {"value": None, "note": "the query returned no series"},
    )
    ambiguous = pulse("metrics", "query", "prom", "pulse_test_latency_ms")
    assert ambiguous.returncode == 2 and "returned 2 series" in ambiguous.stderr
    unknown = pulse("metrics", "query", "nope", "up")
    assert (unknown.returncode, unknown.stderr) == (2, "pulse: no integration 'nope'\n")
    assert pulse("metrics", "globex").stderr == "pulse: no organization 'globex'\n"
