"""Calculated metrics in the configuration file: formulas and variables that match, sources the
organization declares, no cycles; each problem named with its path, nothing written."""

import pytest

from pulse import configfile
from pulse.calculated.spec import find_cycle
from pulse.errors import ConfigError
from pulse.models import CalculatedMetric, CalculatedMetricVariable

HEAD = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {key: api, name: API, url: "http://127.0.0.1:9/health", interval: 30s, extract: {requests: "[BODY].requests"}}
      - {key: errors, name: Errors, type: metric}
      - {key: latency, name: Latency, type: metric}
    integrations:
      - {key: prom, type: prometheus, url: "http://127.0.0.1:9"}
    metrics:
      - {key: http-errors, name: HTTP errors, integration: prom, query: "sum(errors)", interval: 60s}
      - {key: p95, name: p95, integration: prom, query: "p95", interval: 60s, component: latency}
    calculated_metrics:
"""
GOOD = """
      - key: error-rate
        name: Error rate
        formula: "errors / requests * 100"
        variables: {errors: {metric: http-errors}, requests: {extracted: api/requests}}
        max_age: 5m
        unit: "%"
        thresholds: {direction: above, warning: 1, critical: 5, for: 2}
        component: errors
      - key: budget
        name: Budget left
        formula: "100 - rate * 10"
        variables: {rate: {calculated: error-rate}}
"""


def problems(calculated: str) -> str:
    with pytest.raises(ConfigError) as raised:
        configfile.load(HEAD + calculated)
    return str(raised.value)


def metric(key: str, formula: str, variables: str, more: str = "") -> str:
    return f"      - {{key: {key}, name: {key}, formula: {formula!r}, variables: {{{variables}}}{more}}}\n"


def test_a_valid_file_loads():
    [organization] = configfile.load(HEAD + GOOD).organizations
    rate, budget = organization.calculated_metrics
    assert (rate.max_age.total_seconds(), rate.thresholds.critical, rate.component) == (300, 5, "errors")
    assert (budget.max_age.total_seconds(), budget.variables["rate"].calculated) == (600, "error-rate")


@pytest.mark.parametrize(
    ("calculated", "expected"),
    [
        (
            metric("a", "errors / requests", "errors: {metric: http-errors}"),
            "calculated_metrics[0]: the formula uses requests, which variables does not map",
        ),
        (
            metric("a", "errors", "errors: {metric: http-errors}, extra: {metric: p95}"),
            "variables maps extra, which the formula does not use",
        ),
        (metric("a", "x", "x: {metric: nope}"), "calculated_metrics[0].variables.x names the metric 'nope'"),
        (metric("a", "x", "x: {extracted: api/nope}"), "calculated_metrics[0].variables.x names 'api/nope', which no"),
        (metric("a", "x", "x: {extracted: web/requests}"), "names 'web/requests', which no component declares"),
        (metric("a", "x", "x: {calculated: b}"), "names the calculated metric 'b', which is not declared"),
        (
            metric("a", "x", "x: {metric: http-errors, calculated: b}"),
            "variables.x: give one source: metric, extracted (component/name) or calculated",
        ),
        (metric("a", "x", "x: {}"), "variables.x: give one source"),
        (metric("a", "x", "x: {extracted: api}"), "variables.x.extracted: String should match pattern"),
        (metric("a", "__x", "__x: {metric: p95}"), "formula: __x: __x: names may not contain __ (char 1)"),
        (
            metric("a", "x.y", "x: {metric: p95}"),
            "calculated_metrics[0].formula: x.y: properties (.) are not supported (char 2)",
        ),
        (metric("a", "x", "'x y': {metric: p95}"), "variables.x y.[key]: String should match pattern"),
        (metric("a", "x", ""), "calculated_metrics[0].variables: Dictionary should have at least 1 item"),
        (metric("a", "1 + 1", ""), "variables: Dictionary should have at least 1 item"),
        (
            metric("a", "x", "x: {metric: http-errors}", ", max_age: 30s"),
            "calculated_metrics[0].max_age (30s) is shorter than the interval of its input x (1m)",
        ),
        (metric("a", "x", "x: {metric: p95}", ", max_age: 1s"), "max_age: must be between 15s and 168h, not 1s"),
        (
            metric("a", "x", "x: {metric: p95}", ", component: api"),
            "drives the component 'api', which must be declared with `type: metric`",
        ),
        (
            metric("a", "x", "x: {metric: p95}", ", component: latency"),
            "calculated_metrics[0]: the component 'latency' is driven by two metrics",
        ),
        (
            metric("a", "x", "x: {metric: p95}", ", component: errors")
            + metric("b", "x", "x: {metric: p95}", ", component: errors"),
            "calculated_metrics[1]: the component 'errors' is driven by two metrics",
        ),
        (metric("a", "x", "x: {metric: p95}") * 2, "calculated metric key 'a' appears twice"),
        (metric("a", "x", "x: {calculated: a}"), "calculated_metrics[0] feeds itself: a -> a"),
        (
            metric("a", "x + y", "x: {calculated: b}, y: {metric: p95}")
            + metric("b", "x", "x: {calculated: c}")
            + metric("c", "x * 2", "x: {calculated: a}"),
            "calculated_metrics[0] feeds itself: a -> b -> c -> a",
        ),
        (
            metric("ok", "x", "x: {metric: p95}")
            + metric("b", "x", "x: {calculated: c}")
            + metric("c", "x", "x: {calculated: b}"),
            "calculated_metrics[1] feeds itself: b -> c -> b",
        ),
    ],
)
def test_problems_are_named_with_their_path(calculated, expected):
    assert expected in problems(calculated)


def test_a_long_chain_is_no_cycle_and_no_recursion():
    chain = {f"m{i}": [f"m{i + 1}"] for i in range(100_000)}
    assert find_cycle(chain) is None
    chain["m100000"] = ["m50000"]
    cycle = find_cycle(chain)
    assert cycle is not None and (cycle[0], cycle[-1], len(cycle)) == ("m50000", "m50000", 50_002)


def test_a_diamond_is_no_cycle():
    assert find_cycle({"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": []}) is None


def test_apply_writes_metrics_and_variables_and_marks_changed_ones(database):
    configfile.apply(configfile.load(HEAD + GOOD))
    rate, budget = CalculatedMetric.select().order_by(CalculatedMetric.id)
    assert (rate.formula, rate.max_age_seconds, rate.for_count, rate.warning) == (
        "errors / requests * 100",
        300,
        2,
        1.0,
    )
    assert rate.component.key == "errors" and budget.component is None
    variables = {(v.calculated_metric.key, v.name): v for v in CalculatedMetricVariable.select()}
    assert variables["error-rate", "errors"].metrics_query.key == "http-errors"
    assert variables["error-rate", "requests"].extracted_value.name == "requests"
    assert variables["budget", "rate"].calculated_input_id == rate.id
    assert rate.pending_since is not None and budget.pending_since is not None  # new: evaluated soon

    CalculatedMetric.update(pending_since=None, due_at=None).execute()
    configfile.apply(configfile.load(HEAD + GOOD))  # nothing changed: nothing marked
    assert CalculatedMetric.select().where(CalculatedMetric.pending_since.is_null(False)).count() == 0

    configfile.apply(configfile.load(HEAD + GOOD.replace("rate * 10", "rate * 20")))
    marked = CalculatedMetric.select().where(CalculatedMetric.pending_since.is_null(False))
    assert [m.key for m in marked] == ["budget"]

    configfile.apply(configfile.load(HEAD + GOOD.split("      - key: budget")[0]), prune=True)
    assert [m.key for m in CalculatedMetric.select()] == ["error-rate"]


@pytest.mark.parametrize(
    ("formula", "problem"),
    [
        ("s3cr3t + (", "calculated_metrics[0].formula: not valid (the reason would repeat the value of ${F}"),
        ("s3cr3t / 2", "calculated_metrics[0]: not valid (the reason would repeat the value of ${F}"),
    ],
)
def test_a_formula_from_the_environment_is_never_repeated(monkeypatch, formula, problem):
    monkeypatch.setenv("F", formula)
    refused = problems(metric("a", "${F}", "errors: {metric: http-errors}"))
    assert problem in refused and "s3cr3t" not in refused
