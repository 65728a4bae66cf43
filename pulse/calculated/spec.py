"""Calculated metrics in the configuration file, written with the rest of it (`pulse.configfile`).

    calculated_metrics:
      - key: error-rate
        name: Error rate
        formula: "errors / requests * 100"
        variables:
          errors: {metric: http-errors}         # a metric of this organization
          requests: {extracted: api/requests}   # a component's key / one of its extracted values
          budget: {calculated: error-budget}    # another calculated metric
        max_age: 5m            # an input older than this makes the metric stale (default 10m)
        unit: "%"
        thresholds: {direction: above, warning: 1, critical: 5, for: 2}
        no_data: keep          # keep, degraded or outage: what no value or a stale input observes
        component: api-errors  # optional: a component of type metric this metric drives

The formula's variables and ``variables`` must match, each source must be declared in the
organization, and calculated metrics must not feed each other in a cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from pulse.calculated import due
from pulse.calculated.formula import parse
from pulse.components.thresholds import Thresholds, ThresholdsSpec, declared
from pulse.metrics.spec import MetricSpec
from pulse.models import CalculatedMetric, CalculatedMetricVariable, Component, ExtractedValue, MetricsQuery, utcnow
from pulse.spec import SLUG, Strict, parse_duration, show_duration, within
from pulse.uptime.spec import ComponentSpec

MaxAge = Annotated[
    timedelta, BeforeValidator(parse_duration), AfterValidator(within(timedelta(seconds=15), timedelta(days=7)))
]
NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


class Source(Strict):
    metric: str | None = Field(None, pattern=SLUG)
    extracted: str | None = Field(None, pattern=SLUG[:-1] + r"/[A-Za-z0-9_-]{1,64}$")
    calculated: str | None = Field(None, pattern=SLUG)

    @model_validator(mode="after")
    def _one(self) -> Source:
        if sum(value is not None for value in (self.metric, self.extracted, self.calculated)) != 1:
            raise ValueError("give one source: metric, extracted (component/name) or calculated")
        return self


class CalculatedMetricSpec(Strict):
    key: str = Field(pattern=SLUG)
    name: str = Field(min_length=1, max_length=200)
    formula: str = Field(min_length=1)
    variables: dict[Annotated[str, Field(pattern=NAME)], Source] = Field(min_length=1, max_length=50)
    max_age: MaxAge = timedelta(minutes=10)
    unit: str = Field("", max_length=32)
    thresholds: ThresholdsSpec = Field(default_factory=lambda: ThresholdsSpec.model_validate({}))
    no_data: Literal["keep", "degraded", "outage"] = "keep"
    component: str | None = Field(None, pattern=SLUG)

    @field_validator("formula")
    @classmethod
    def _parses(cls, value: str) -> str:
        parse(value)  # FormulaError, a ValueError, says where and why
        return value

    @model_validator(mode="after")
    def _variables_match(self) -> CalculatedMetricSpec:
        used = parse(self.formula).variables
        unknown = [name for name in used if name not in self.variables]
        if unknown:
            raise ValueError(f"the formula uses {', '.join(unknown)}, which variables does not map to a source")
        unused = [name for name in self.variables if name not in used]
        if unused:
            raise ValueError(f"variables maps {', '.join(unused)}, which the formula does not use")
        return self


def references(
    calculated: list[CalculatedMetricSpec], metrics: list[MetricSpec], components: list[ComponentSpec]
) -> list[str]:
    """What the calculated metrics name that the organization does not declare, or may not use:
    unknown sources, inputs polled less often than ``max_age``, components that are not of type
    metric or are driven already, and cycles."""
    problems = []
    known = Declared(
        metric_intervals={m.key: m.interval for m in metrics},
        extracted={f"{c.key}/{name}": c.interval for c in components for name in c.extract},
        keys={c.key for c in calculated},
        metric_components={c.key for c in components if c.type == "metric"},
        driven={m.component for m in metrics if m.component},
    )
    for index, spec in enumerate(calculated):
        problems += spec_references(spec, known, f"calculated_metrics[{index}]")
        if spec.component is not None:
            known.driven.add(spec.component)
    cycle = find_cycle({c.key: inputs(c) for c in calculated})
    if cycle:
        index = next(i for i, c in enumerate(calculated) if c.key == cycle[0])
        problems.append(f"calculated_metrics[{index}] feeds itself: {' -> '.join(cycle)}")
    return problems


@dataclass
class Declared:
    """What a calculated metric may name: the metrics' intervals and the components' extracted
    values' (``component/name``) by key, the calculated metrics' keys, the components of type
    metric, and those some metric drives already."""

    metric_intervals: dict[str, timedelta]
    extracted: dict[str, timedelta]
    keys: set[str]
    metric_components: set[str]
    driven: set[str]


def spec_references(spec: CalculatedMetricSpec, known: Declared, where: str) -> list[str]:
    """What one calculated metric (at ``where``: ``calculated_metrics[3]`` in the file, ``$`` in
    the API's body) names that ``known`` does not have, or that it may not use (see
    `references`); cycles aside."""
    problems = []
    for name, source in spec.variables.items():
        interval = None
        if source.metric is not None:
            interval = known.metric_intervals.get(source.metric)
            if interval is None:
                problems.append(f"{where}.variables.{name} names the metric {source.metric!r}, which is not declared")
        elif source.extracted is not None:
            interval = known.extracted.get(source.extracted)
            if interval is None:
                problems.append(
                    f"{where}.variables.{name} names {source.extracted!r}, which no component declares "
                    "(component key/name of one of its `extract` values)"
                )
        elif source.calculated not in known.keys:
            problems.append(
                f"{where}.variables.{name} names the calculated metric {source.calculated!r}, which is not declared"
            )
        if interval is not None and interval > spec.max_age:
            problems.append(
                f"{where}.max_age ({show_duration(spec.max_age)}) is shorter than the interval of its input "
                f"{name} ({show_duration(interval)}): it would be stale most of the time"
            )
    if spec.component is not None:
        if spec.component not in known.metric_components:
            problems.append(
                f"{where}.component drives the component {spec.component!r}, which must be declared with `type: metric`"
            )
        elif spec.component in known.driven:
            problems.append(f"{where}: the component {spec.component!r} is driven by two metrics")
    return problems


def inputs(spec: CalculatedMetricSpec) -> list[str]:
    """The keys of the calculated metrics ``spec`` reads."""
    return [s.calculated for s in spec.variables.values() if s.calculated]


def find_cycle(inputs: dict[str, list[str]]) -> list[str] | None:
    """A cycle in the graph of calculated metrics (key -> the keys of its calculated inputs), as
    the path that closes it (``[a, b, a]``), or None. Iterative: a long chain is no recursion."""
    done: set[str] = set()
    for start in inputs:
        if start in done:
            continue
        path, on_path = [start], {start}
        todo: list[Iterator[str]] = [iter(inputs[start])]
        while todo:
            following = next(todo[-1], None)
            if following is None:
                on_path.discard(path[-1])
                done.add(path.pop())
                todo.pop()
            elif following in on_path:
                return [*path[path.index(following) :], following]
            elif following in inputs and following not in done:
                path.append(following)
                on_path.add(following)
                todo.append(iter(inputs[following]))
    return None


def sync(
    organization_id: int,
    specs: list[CalculatedMetricSpec],
    component_ids: dict[str, int],
    *,
    prune: bool,
    advance: Callable[[int], object],
) -> int:
    """Upsert the organization's calculated metrics (by key) and their variables inside the
    caller's transaction, as the file's (owner ``file``, one more version when changed), mark
    those created or changed (and what they feed) for evaluation; with ``prune``, delete those not
    named that the file made. Returns how many were deleted.

    One made through the API (owner ``api``, `pulse.api`) is the file's again once the file names
    it; one the file does not name is left alone, pruned or not, and so are the file's that it
    reads."""
    # Locked in id order first, as marks lock them: an apply and a poll's mark never deadlock.
    locked = (
        CalculatedMetric.select().where(CalculatedMetric.organization == organization_id).order_by(CalculatedMetric.id)
    )
    existing = {c.key: c for c in locked.for_update("FOR NO KEY UPDATE")}  # type: ignore[arg-type]
    changed: list[int] = []
    ids: dict[str, int] = {}
    for spec in specs:
        fields = {**calculated_fields(spec, component_ids.get(spec.component or "")), "owner": "file"}
        current = existing.get(spec.key)
        if current is None:
            ids[spec.key] = CalculatedMetric.insert(organization=organization_id, key=spec.key, **fields).execute()
            changed.append(ids[spec.key])
        else:
            ids[spec.key] = current.id
            if any(current.__data__[name] != value for name, value in fields.items()):  # raw: the component id
                updated = CalculatedMetric.update(**fields, updated_at=utcnow(), version=CalculatedMetric.version + 1)
                updated.where(CalculatedMetric.id == current.id).execute()
                changed.append(current.id)
    sources = _sources(organization_id, ids)
    mapped: dict[int, dict[str, tuple[Any, ...]]] = {}
    variables = CalculatedMetricVariable.select().where(
        CalculatedMetricVariable.calculated_metric.in_(list(ids.values()) or [0])
    )
    for v in variables:
        mapped.setdefault(v.calculated_metric_id, {})[v.name] = (
            v.metrics_query_id,
            v.extracted_value_id,
            v.calculated_input_id,
        )
    for spec in specs:
        metric_id = ids[spec.key]
        wanted = {name: sources(source) for name, source in spec.variables.items()}
        if mapped.get(metric_id, {}) != wanted:
            _replace_variables(metric_id, wanted)
            changed.append(metric_id)
        advance(1)
    deleted = 0
    if prune:
        inputs_of_the_api = (
            CalculatedMetricVariable.select(CalculatedMetricVariable.calculated_input)
            .join(CalculatedMetric, on=CalculatedMetricVariable.calculated_metric == CalculatedMetric.id)
            .where(CalculatedMetric.owner == "api", CalculatedMetricVariable.calculated_input.is_null(False))
        )
        deleted = (
            CalculatedMetric.delete()
            .where(
                CalculatedMetric.organization == organization_id,
                CalculatedMetric.key.not_in(list(ids) or [""]),
                CalculatedMetric.owner == "file",
                CalculatedMetric.id.not_in(inputs_of_the_api),
            )
            .execute()
        )
    due.mark(sorted(set(changed)))
    return deleted


def write_one(organization_id: int, spec: CalculatedMetricSpec, component_id: int | None, current: Any) -> int:
    """Write one calculated metric as the API's (owner ``api``, one more version), a new one when
    ``current`` is None, its variables read from the organization's sources (that `spec_references`
    found), and mark it (and what it feeds) for evaluation. Returns its id."""
    fields = {**calculated_fields(spec, component_id), "owner": "api"}
    if current is None:
        metric_id = CalculatedMetric.insert(organization=organization_id, key=spec.key, **fields).execute()
    else:
        metric_id = current.id
        updated = CalculatedMetric.update(**fields, updated_at=utcnow(), version=CalculatedMetric.version + 1)
        updated.where(CalculatedMetric.id == metric_id).execute()
    keys = CalculatedMetric.select(CalculatedMetric.id, CalculatedMetric.key)
    sources = _sources(
        organization_id, {c.key: c.id for c in keys.where(CalculatedMetric.organization == organization_id)}
    )
    _replace_variables(metric_id, {name: sources(source) for name, source in spec.variables.items()})
    due.mark([metric_id])
    return metric_id


def _replace_variables(metric_id: int, wanted: dict[str, tuple[Any, ...]]) -> None:
    """A calculated metric's variables, each name's (metrics query, extracted value, calculated
    metric) ids, ``wanted`` in place of those it had."""
    CalculatedMetricVariable.delete().where(CalculatedMetricVariable.calculated_metric == metric_id).execute()
    CalculatedMetricVariable.insert_many(
        [
            {
                "calculated_metric": metric_id,
                "name": name,
                "metrics_query": query,
                "extracted_value": extracted,
                "calculated_input": calculated,
            }
            for name, (query, extracted, calculated) in wanted.items()
        ]
    ).execute()


def calculated_fields(spec: CalculatedMetricSpec, component_id: int | None) -> dict[str, Any]:
    """A calculated metric's columns but its key (and owner), ``component_id`` the component's it
    drives."""
    return {
        "component": component_id,
        "name": spec.name,
        "formula": spec.formula,
        "unit": spec.unit,
        "max_age_seconds": round(spec.max_age.total_seconds()),
        **Thresholds.of(spec.thresholds, spec.no_data).fields(),
    }


def _sources(organization_id: int, calculated_ids: dict[str, int]) -> Callable[[Source], tuple[Any, ...]]:
    """The (metrics query, extracted value, calculated metric) ids of a source, one of them set."""
    queries = {
        q.key: q.id
        for q in MetricsQuery.select(MetricsQuery.id, MetricsQuery.key).where(
            MetricsQuery.organization == organization_id
        )
    }
    extracted = {
        f"{row.component.key}/{row.name}": row.id
        for row in ExtractedValue.select(ExtractedValue.id, ExtractedValue.name, Component.key)
        .join(Component)
        .where(Component.organization == organization_id)
    }

    def ids(source: Source) -> tuple[Any, ...]:
        if source.metric is not None:
            return queries[source.metric], None, None
        if source.extracted is not None:
            return None, extracted[source.extracted], None
        assert source.calculated is not None
        return None, None, calculated_ids[source.calculated]

    return ids


def calculated_document(
    row: CalculatedMetric, variables: dict[str, dict[str, str]], component: str | None
) -> dict[str, Any]:
    """The calculated metric as a configuration file declares it, ``variables`` each name's source
    by key (``{"metric": "http-errors"}``), ``component`` the key of the one it drives, so that a
    change to some of its fields (the API's PATCH) is validated whole."""
    found = {
        "key": row.key,
        "name": row.name,
        "formula": row.formula,
        "variables": variables,
        "max_age": f"{row.max_age_seconds}s",
        "unit": row.unit,
        "thresholds": declared(row),
        "no_data": row.no_data,
    }
    return {**found, "component": component} if component is not None else found
