"""``/api/v1/metrics`` and ``/api/v1/metrics/{key}``: the token's organization's metrics (the
queries it polls), listed by key a page at a time, filtered by ``integration`` and ``component``
(their keys), and made, replaced, patched and deleted as the configuration file declares them
(`pulse.metrics.spec.MetricSpec`), by `pulse.api.resources`.

A metric names its integration and the component it drives by key, here and in a body, and a
write is checked as the file checks it (`pulse.metrics.spec.metric_references`, the same
messages): an integration or a component of type metric the organization has, the options and the
query its integration takes, a component no other metric or calculated metric drives; and a
calculated metric reading it would not grow stale (its ``max_age`` at least the interval). A new
interval, or a metric unpaused, is polled anew, as `pulse apply` does. A metric a calculated
metric reads is not deleted (409 naming them). It is shown with its latest poll (``state``,
``last_value``...); not its last error, which quotes its integration's reply.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from typing_extensions import TypedDict

from pulse.api.resources import OWNER, Named, Resource
from pulse.api.writes import invalid
from pulse.components.thresholds import declared
from pulse.metrics import spec as metrics
from pulse.models import CalculatedMetric, CalculatedMetricVariable, Component, Integration, MetricsQuery
from pulse.spec import show_duration

# ``thresholds:`` as the file declares them (``for`` is a word of Python's).
ThresholdsView = TypedDict(
    "ThresholdsView",
    {
        "direction": str,
        "warning": float | None,
        "critical": float | None,
        "for": int,
        "recover": int,
        "critical_status": str,
    },
)


class MetricView(TypedDict):
    key: str
    name: str
    integration: str
    query: str
    aggregate: str | None
    field: str | None
    interval_s: int
    unit: str
    thresholds: ThresholdsView
    no_data: str
    component: str | None
    paused: bool
    state: str
    last_value: float | None
    last_value_at: str | None
    last_polled_at: str | None


class MetricPage(TypedDict):
    metrics: list[MetricView]
    next_cursor: str | None


def shown(rows: list[MetricsQuery]) -> list[MetricView]:
    integrations = keys(Integration, {row.integration_id for row in rows})
    components = keys(Component, {row.component_id for row in rows if row.component_id is not None})
    return [
        {
            "key": row.key,
            "name": row.name,
            "integration": integrations[row.integration_id],
            "query": row.query,
            "aggregate": row.options.get("aggregate"),
            "field": row.options.get("field"),
            "interval_s": row.interval_seconds,
            "unit": row.unit,
            "thresholds": thresholds(row),
            "no_data": row.no_data,
            "component": components.get(row.component_id) if row.component_id is not None else None,
            "paused": row.paused,
            "state": row.state,
            "last_value": row.last_value,
            "last_value_at": row.last_value_at and row.last_value_at.isoformat(),
            "last_polled_at": row.last_polled_at and row.last_polled_at.isoformat(),
        }
        for row in rows
    ]


def thresholds(row: MetricsQuery | CalculatedMetric) -> ThresholdsView:
    return cast(ThresholdsView, declared(row))


def keys(model: type[Integration | Component | MetricsQuery | CalculatedMetric], ids: set[int]) -> dict[int, str]:
    """The keys of ``model``'s rows ``ids``, by id, in one query."""
    if not ids:
        return {}
    return {row.id: row.key for row in model.select(model.id, model.key).where(model.id.in_(list(ids)))}


def _document(row: MetricsQuery) -> dict[str, object]:
    component = keys(Component, {row.component_id}).get(row.component_id) if row.component_id is not None else None
    return metrics.metric_document(row, keys(Integration, {row.integration_id})[row.integration_id], component)


def driving(
    organization_id: int, key: str | None, metric_id: int | None, calculated_id: int | None
) -> tuple[int | None, set[str], set[str]]:
    """The component ``key`` names in the organization, as the file's checks read it: its id (None
    for none), ``{key}`` when it is of type metric, and ``{key}`` when a metric other than
    ``metric_id`` or a calculated metric other than ``calculated_id`` drives it."""
    if key is None:
        return None, set(), set()
    component = Component.get_or_none(Component.organization == organization_id, Component.key == key)
    if component is None:
        return None, set(), set()
    by_metric = MetricsQuery.select().where(MetricsQuery.component == component.id, MetricsQuery.id != (metric_id or 0))
    by_calculated = CalculatedMetric.select().where(
        CalculatedMetric.component == component.id, CalculatedMetric.id != (calculated_id or 0)
    )
    driven = {key} if by_metric.exists() or by_calculated.exists() else set()
    return component.id, {key} if component.type == "METRIC" else set(), driven


def _write(organization_id: int, spec: metrics.MetricSpec, current: MetricsQuery | None) -> int:
    integration = Integration.get_or_none(
        Integration.organization == organization_id, Integration.key == spec.integration
    )
    kinds = {integration.key: integration.type} if integration is not None else {}
    component_id, metric_components, driven = driving(
        organization_id, spec.component, current.id if current else None, None
    )
    problems = metrics.metric_references(spec, kinds, metric_components, driven, "$")
    if current is not None:
        problems += _stale_readers(current.id, spec.interval)
    if problems:
        raise invalid("metric", problems)
    assert integration is not None  # no problem: the organization has it
    fields = {**metrics.metric_fields(spec, integration.id, component_id), "owner": OWNER}
    return metrics.write_metric(organization_id, spec.key, fields, current)


def _stale_readers(metric_id: int, interval: timedelta) -> list[str]:
    """A problem for each calculated metric reading the metric whose ``max_age`` is shorter than
    the metric's new ``interval``, as the file's check says it of the calculated metric."""
    readers = (
        CalculatedMetric.select(CalculatedMetric.key, CalculatedMetric.max_age_seconds, CalculatedMetricVariable.name)
        .join(CalculatedMetricVariable, on=CalculatedMetricVariable.calculated_metric == CalculatedMetric.id)
        .where(CalculatedMetricVariable.metrics_query == metric_id)
        .order_by(CalculatedMetric.key)
        .objects()
    )
    return [
        f"$.interval ({show_duration(interval)}) is longer than the max_age ({show_duration(max_age)}) of the "
        f"calculated metric {reader.key!r} that reads it as {reader.name}: it would be stale most of the time"
        for reader in readers
        if interval > (max_age := timedelta(seconds=reader.max_age_seconds))
    ]


def readers(column: Any, row_id: int) -> list[str]:
    """The calculated metrics a variable of which reads row ``row_id`` through ``column`` (a
    variable's metric or calculated input), as a refused delete names them."""
    query = (
        CalculatedMetric.select(CalculatedMetric.key)
        .join(CalculatedMetricVariable, on=CalculatedMetricVariable.calculated_metric == CalculatedMetric.id)
        .where(column == row_id)
        .distinct()
        .order_by(CalculatedMetric.key)
    )
    return [f"calculated metric {c.key!r}" for c in query]


METRICS = Resource(
    name="metric",
    plural="metrics",
    model=MetricsQuery,
    identifier="key",
    spec=metrics.MetricSpec,
    view=MetricView,
    page=MetricPage,
    show=shown,
    document=_document,
    write=_write,
    existing=lambda organization_id, spec: MetricsQuery.get_or_none(
        MetricsQuery.organization == organization_id, MetricsQuery.key == spec.key
    ),
    referrers=lambda row: readers(CalculatedMetricVariable.metrics_query, row.id),
    filters=(
        Named(
            "integration",
            "Only the metrics of this integration (its key).",
            column=MetricsQuery.integration,
            model=Integration,
        ),
        Named(
            "component",
            "Only the metrics that drive this component (its key).",
            column=MetricsQuery.component,
            model=Component,
        ),
    ),
    example={
        "key": "api-p95",
        "name": "API latency p95",
        "integration": "prom",
        "query": "histogram_quantile(0.95, sum by (le) (rate(http_request_seconds_bucket[5m])))",
        "aggregate": None,
        "field": None,
        "interval_s": 60,
        "unit": "ms",
        "thresholds": {
            "direction": "above",
            "warning": 300.0,
            "critical": 800.0,
            "for": 3,
            "recover": 1,
            "critical_status": "MAJOR_OUTAGE",
        },
        "no_data": "keep",
        "component": "latency",
        "paused": False,
        "state": "ok",
        "last_value": 212.5,
        "last_value_at": "2026-12-07T18:20:00+00:00",
        "last_polled_at": "2026-12-07T18:20:00+00:00",
    },
    body_example={
        "key": "api-p95",
        "name": "API latency p95",
        "integration": "prom",
        "query": "histogram_quantile(0.95, sum by (le) (rate(http_request_seconds_bucket[5m])))",
        "interval": "60s",
        "unit": "ms",
        "thresholds": {"direction": "above", "warning": 300, "critical": 800, "for": 3},
        "component": "latency",
    },
    patch_example={"paused": True},
)
