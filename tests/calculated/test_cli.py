"""`pulse apply` of calculated metrics with a cycle, and `pulse calculated`: what operators run."""

import json

from pulse.models import CalculatedMetric
from tests.support.cli import pulse

FILE = """
organizations:
  - slug: acme
    name: Acme
    integrations:
      - {key: prom, type: prometheus, url: "http://127.0.0.1:9"}
    metrics:
      - {key: requests, name: Requests, integration: prom, query: requests}
    calculated_metrics:
      - {key: a, name: A, formula: "b + requests", variables: {b: {calculated: b}, requests: {metric: requests}}}
      - {key: b, name: B, formula: "a * 2", variables: {a: {calculated: a}}}
"""


def test_a_cycle_is_refused_at_apply_with_its_path_and_nothing_is_written(database, tmp_path):
    path = tmp_path / "pulse.yaml"
    path.write_text(FILE)
    applied = pulse("apply", "-f", str(path))
    assert applied.returncode == 2
    assert "organizations[0].calculated_metrics[0] feeds itself: a -> b -> a" in applied.stderr
    assert "Traceback" not in applied.stderr
    assert CalculatedMetric.select().count() == 0


def test_pulse_calculated_lists_metrics_with_their_inputs(database, tmp_path):
    path = tmp_path / "pulse.yaml"
    path.write_text(
        FILE.replace("b + requests", "requests").replace(", variables: {b: {calculated: b}, ", ", variables: {")
    )
    applied = pulse("apply", "-f", str(path))
    assert applied.returncode == 0, applied.stderr
    assert "2 calculated metric(s)" in applied.stdout

    listed = pulse("calculated", "acme", "--json")
    assert listed.returncode == 0, listed.stderr
    a, b = json.loads(listed.stdout)
    assert (a["key"], a["state"], a["last_value"], a["inputs"]) == (
        "a",
        "unknown",
        None,
        [
            {
                "name": "requests",
                "source": "metric requests",
                "value": None,
                "at": None,
                "age_seconds": None,
                "stale": False,
            }
        ],
    )
    assert b["inputs"][0]["source"] == "calculated a"
    table = pulse("calculated")
    assert table.returncode == 0 and "acme/a" in table.stdout and "requests=- (no value)" in table.stdout
    assert pulse("calculated", "globex").stderr == "pulse: no organization 'globex'\n"
