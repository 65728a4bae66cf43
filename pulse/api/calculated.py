"""``/api/v1/calculated-metrics`` and ``/api/v1/calculated-metrics/{key}``: the token's
organization's calculated metrics, listed by key a page at a time, filtered by ``component`` (its
key), and made, replaced, patched and deleted as the configuration file declares them
(`pulse.calculated.spec.CalculatedMetricSpec`), by `pulse.api.resources`.

Its formula is validated as the file's, and its sources are checked as the file checks them
(`pulse.calculated.spec.spec_references`, the same messages): each variable's metric, extracted
value (``component/name``) or calculated metric is the organization's (422 naming the variable's
path), polled at least as often as ``max_age``; the component it drives is of type metric and
driven by no other; and it does not feed itself. A write marks it for evaluation, as `pulse apply`
does. A calculated metric another reads is not deleted (409 naming them).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from typing_extensions import TypedDict

from pulse.api.metrics import ThresholdsView, driving, keys, readers, thresholds
from pulse.api.resources import Named, Resource
from pulse.api.writes import invalid
from pulse.calculated import spec as calculated
from pulse.models import CalculatedMetric, CalculatedMetricVariable, Component, ExtractedValue, MetricsQuery


class SourceView(TypedDict, total=False):
    metric: str
    extracted: str
    calculated: str


class CalculatedMetricView(TypedDict):
    key: str
    name: str
    formula: str
    variables: dict[str, SourceView]
    max_age_s: int
    unit: str
    thresholds: ThresholdsView
    no_data: str
    component: str | None
    state: str
    last_value: float | None
    last_value_at: str | None
    last_evaluated_at: str | None


class CalculatedMetricPage(TypedDict):
    calculated_metrics: list[CalculatedMetricView]
    next_cursor: str | None


def shown(rows: list[CalculatedMetric]) -> list[CalculatedMetricView]:
    variables = variables_of([row.id for row in rows])
    components = keys(Component, {row.component_id for row in rows if row.component_id is not None})
    return [
        {
            "key": row.key,
            "name": row.name,
            "formula": row.formula,
            "variables": variables.get(row.id, {}),  # type: ignore[typeddict-item]
            "max_age_s": row.max_age_seconds,
            "unit": row.unit,
            "thresholds": thresholds(row),
            "no_data": row.no_data,
            "component": components.get(row.component_id) if row.component_id is not None else None,
            "state": row.state,
            "last_value": row.last_value,
            "last_value_at": row.last_value_at and row.last_value_at.isoformat(),
            "last_evaluated_at": row.last_evaluated_at and row.last_evaluated_at.isoformat(),
        }
        for row in rows
    ]


def variables_of(ids: list[int]) -> dict[int, dict[str, dict[str, str]]]:
    """The variables of the calculated metrics ``ids``, each name's source by key as the file
    declares it (``{"metric": "http-errors"}``), by calculated metric id."""
    rows = list(CalculatedMetricVariable.select().where(CalculatedMetricVariable.calculated_metric.in_(ids or [0])))
    queries = keys(MetricsQuery, {v.metrics_query_id for v in rows if v.metrics_query_id is not None})
    inputs = keys(CalculatedMetric, {v.calculated_input_id for v in rows if v.calculated_input_id is not None})
    extracted_ids = [v.extracted_value_id for v in rows if v.extracted_value_id is not None]
    extracted = {
        e.id: f"{e.component.key}/{e.name}"
        for e in ExtractedValue.select(ExtractedValue.id, ExtractedValue.name, Component.key)
        .join(Component)
        .where(ExtractedValue.id.in_(extracted_ids or [0]))
    }
    found: dict[int, dict[str, dict[str, str]]] = {}
    for v in rows:
        if v.metrics_query_id is not None:
            source = {"metric": queries[v.metrics_query_id]}
        elif v.extracted_value_id is not None:
            source = {"extracted": extracted[v.extracted_value_id]}
        else:
            source = {"calculated": inputs[v.calculated_input_id]}  # type: ignore[index]  # one of the three is set
        found.setdefault(v.calculated_metric_id, {})[v.name] = source
    return found


def _document(row: CalculatedMetric) -> dict[str, Any]:
    component = keys(Component, {row.component_id}).get(row.component_id) if row.component_id is not None else None
    return calculated.calculated_document(row, variables_of([row.id]).get(row.id, {}), component)


def _write(organization_id: int, spec: calculated.CalculatedMetricSpec, current: CalculatedMetric | None) -> int:
    component_id, metric_components, driven = driving(
        organization_id, spec.component, None, current.id if current else None
    )
    known = calculated.Declared(
        metric_intervals=_metric_intervals(organization_id, [s.metric for s in spec.variables.values() if s.metric]),
        extracted=_extracted_intervals(organization_id, [s.extracted for s in spec.variables.values() if s.extracted]),
        keys={spec.key, *_calculated_keys(organization_id, calculated.inputs(spec))},
        metric_components=metric_components,
        driven=driven,
    )
    problems = calculated.spec_references(spec, known, "$")
    cycle = calculated.find_cycle({spec.key: calculated.inputs(spec), **_graph(organization_id, spec.key)})
    if cycle:
        problems.append(f"$ feeds itself: {' -> '.join(cycle)}")
    if problems:
        raise invalid("calculated metric", problems)
    return calculated.write_one(organization_id, spec, component_id, current)


def _metric_intervals(organization_id: int, named: list[str]) -> dict[str, timedelta]:
    query = MetricsQuery.select(MetricsQuery.key, MetricsQuery.interval_seconds)
    found = query.where(MetricsQuery.organization == organization_id, MetricsQuery.key.in_(named or [""]))
    return {m.key: timedelta(seconds=m.interval_seconds) for m in found}


def _extracted_intervals(organization_id: int, named: list[str]) -> dict[str, timedelta]:
    query = ExtractedValue.select(ExtractedValue.name, Component.key, Component.interval_seconds).join(Component)
    found = query.where(
        Component.organization == organization_id, Component.key.in_([n.split("/")[0] for n in named] or [""])
    )
    return {f"{e.component.key}/{e.name}": timedelta(seconds=e.component.interval_seconds) for e in found}


def _calculated_keys(organization_id: int, named: list[str]) -> set[str]:
    query = CalculatedMetric.select(CalculatedMetric.key)
    return {
        c.key
        for c in query.where(CalculatedMetric.organization == organization_id, CalculatedMetric.key.in_(named or [""]))
    }


def _graph(organization_id: int, but: str) -> dict[str, list[str]]:
    """The organization's calculated metrics but ``but``: the keys of the calculated metrics each
    reads, by key."""
    graph: dict[str, list[str]] = {}
    rows = CalculatedMetric.select(CalculatedMetric.id, CalculatedMetric.key).where(
        CalculatedMetric.organization == organization_id, CalculatedMetric.key != but
    )
    found = {c.id: c.key for c in rows}
    edges = CalculatedMetricVariable.select().where(
        CalculatedMetricVariable.calculated_metric.in_(list(found) or [0]),
        CalculatedMetricVariable.calculated_input.is_null(False),
    )
    inputs = keys(CalculatedMetric, {e.calculated_input_id for e in edges if e.calculated_input_id is not None})
    for key in found.values():
        graph[key] = []
    for e in edges:
        if e.calculated_input_id is not None:  # as selected
            graph[found[e.calculated_metric_id]].append(inputs[e.calculated_input_id])
    return graph


CALCULATED_METRICS = Resource(
    name="calculated metric",
    plural="calculated-metrics",
    model=CalculatedMetric,
    identifier="key",
    spec=calculated.CalculatedMetricSpec,
    view=CalculatedMetricView,
    page=CalculatedMetricPage,
    show=shown,
    document=_document,
    write=_write,
    existing=lambda organization_id, spec: CalculatedMetric.get_or_none(
        CalculatedMetric.organization == organization_id, CalculatedMetric.key == spec.key
    ),
    referrers=lambda row: readers(CalculatedMetricVariable.calculated_input, row.id),
    filters=(
        Named(
            "component",
            "Only the calculated metric that drives this component (its key).",
            column=CalculatedMetric.component,
            model=Component,
        ),
    ),
    example={
        "key": "error-rate",
        "name": "Error rate",
        "formula": "errors / requests * 100",
        "variables": {"errors": {"metric": "http-errors"}, "requests": {"metric": "http-requests"}},
        "max_age_s": 600,
        "unit": "%",
        "thresholds": {
            "direction": "above",
            "warning": 1.0,
            "critical": 5.0,
            "for": 2,
            "recover": 1,
            "critical_status": "MAJOR_OUTAGE",
        },
        "no_data": "keep",
        "component": None,
        "state": "ok",
        "last_value": 0.4,
        "last_value_at": "2026-12-07T18:20:00+00:00",
        "last_evaluated_at": "2026-12-07T18:20:01+00:00",
    },
    body_example={
        "key": "error-rate",
        "name": "Error rate",
        "formula": "errors / requests * 100",
        "variables": {"errors": {"metric": "http-errors"}, "requests": {"metric": "http-requests"}},
        "unit": "%",
        "thresholds": {"direction": "above", "warning": 1, "critical": 5, "for": 2},
    },
    patch_example={"max_age": "15m"},
)
