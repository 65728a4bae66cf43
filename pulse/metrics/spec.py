"""Integrations and metrics in the configuration file, written with the rest of it
(`pulse.configfile`). The kinds of integration and the settings each takes come from
`INTEGRATIONS`.

    integrations:
      - {key: prom, type: prometheus, url: "http://127.0.0.1:9090", bearer_token: "${PROM_TOKEN}"}
    metrics:
      - key: api-p95
        name: API latency p95
        integration: prom
        query: 'histogram_quantile(0.95, sum by (le) (rate(http_request_seconds_bucket[5m])))'
        interval: 60s
        unit: ms
        thresholds: {direction: above, warning: 300, critical: 800, for: 3}
        component: api          # optional: this metric drives the component's status
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from pulse.components.thresholds import Thresholds, ThresholdsSpec, declared
from pulse.metrics.integrations import INTEGRATIONS
from pulse.metrics.integrations.base import AGGREGATES
from pulse.metrics.integrations.datadog import SITES
from pulse.metrics.integrations.newrelic import REGIONS
from pulse.models import CalculatedMetric, CalculatedMetricVariable, Integration, MetricsQuery, utcnow
from pulse.spec import SLUG, Strict, http_url, parse_duration, takes, within

if TYPE_CHECKING:
    Kind = str
else:
    Kind = Literal[tuple(INTEGRATIONS)]

Interval = Annotated[
    timedelta, BeforeValidator(parse_duration), AfterValidator(within(timedelta(seconds=15), timedelta(hours=24)))
]
# The fields of IntegrationSpec a kind may take (each kind's `Integration.fields` says which).
_SETTINGS = (
    "url",
    "site",
    "region",
    "account_id",
    "datasource",
    "bearer_token",
    "username",
    "password",
    "api_key",
    "app_key",
)


class IntegrationSpec(Strict):
    key: str = Field(pattern=SLUG)
    type: Kind
    url: str | None = Field(None, max_length=2048)
    bearer_token: str | None = Field(None, min_length=1, max_length=4096)
    username: str | None = Field(None, min_length=1, max_length=256)
    password: str | None = Field(None, max_length=4096)
    site: Literal[tuple(SITES)] | None = None  # type: ignore[valid-type]
    region: Literal[tuple(REGIONS)] | None = None  # type: ignore[valid-type]
    account_id: int | None = Field(None, ge=1, le=2**31 - 1, strict=True)
    datasource: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]{1,40}$")
    api_key: str | None = Field(None, min_length=1, max_length=4096)
    app_key: str | None = Field(None, min_length=1, max_length=4096)

    _check_url = field_validator("url")(lambda value: value if value is None else http_url(value))

    @model_validator(mode="after")
    def _by_type(self) -> IntegrationSpec:
        integration = INTEGRATIONS[self.type]
        takes(self, _SETTINGS, integration.fields, integration.optional, f"a {self.type} integration")
        if self.bearer_token and self.username:
            raise ValueError("give a bearer_token or a username and password, not both")
        if self.url and (self.site or self.region):
            raise ValueError(f"give a {'site' if self.site else 'region'} or a url, not both")
        return self

    def settings(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _SETTINGS if getattr(self, name) is not None}


# The fields of MetricSpec that are options of its integration (each kind's `Integration.options`).
_OPTIONS = ("aggregate", "field")


class MetricSpec(Strict):
    key: str = Field(pattern=SLUG)
    name: str = Field(min_length=1, max_length=200)
    integration: str = Field(pattern=SLUG)
    query: str = Field(min_length=1, max_length=10_000)
    aggregate: Literal[tuple(AGGREGATES)] | None = None  # type: ignore[valid-type]
    field: str | None = Field(None, min_length=1, max_length=200)
    interval: Interval = timedelta(seconds=60)
    unit: str = Field("", max_length=32)
    thresholds: ThresholdsSpec = Field(default_factory=lambda: ThresholdsSpec.model_validate({}))
    no_data: Literal["keep", "degraded", "outage"] = "keep"
    component: str | None = Field(None, pattern=SLUG)
    paused: bool = False

    def options(self) -> dict[str, Any]:
        """The options the integration reads (``aggregate``, ``field``), those that are set."""
        return {name: getattr(self, name) for name in _OPTIONS if getattr(self, name) is not None}


def references(
    integrations: list[IntegrationSpec], metrics: list[MetricSpec], metric_components: set[str]
) -> list[str]:
    """What the metrics name that the organization does not declare, or may not use: unknown
    integrations, options their integration does not take, components that are not of type
    metric, a component driven by two metrics."""
    problems = []
    kinds = {i.key: i.type for i in integrations}
    driven: set[str] = set()
    for index, metric in enumerate(metrics):
        problems += metric_references(metric, kinds, metric_components, driven, f"metrics[{index}]")
        if metric.component is not None:
            driven.add(metric.component)
    return problems


def metric_references(
    metric: MetricSpec, kinds: dict[str, str], metric_components: set[str], driven: set[str], where: str
) -> list[str]:
    """What one metric (at ``where``: ``metrics[3]`` in the file, ``$`` in the API's body) names
    that it may not: ``kinds`` are the integrations' types by key, ``metric_components`` the keys
    of the components of type metric, ``driven`` those another metric drives."""
    problems = []
    if metric.integration not in kinds:
        problems.append(f"{where}.integration names the integration {metric.integration!r}, which is not declared")
    else:
        kind = kinds[metric.integration]
        for option in sorted(set(metric.options()) - set(INTEGRATIONS[kind].options)):
            problems.append(f"{where}: a {kind} integration's metric does not take {option}")
        check = INTEGRATIONS[kind].check
        try:
            if check is not None:
                check(metric.query, metric.options())
        except ValueError as e:
            problems.append(f"{where}.query: {e}")
    if metric.component is not None:
        if metric.component not in metric_components:
            problems.append(
                f"{where}.component drives the component {metric.component!r}, which must be declared with "
                "`type: metric`"
            )
        elif metric.component in driven:
            problems.append(f"{where}: the component {metric.component!r} is driven by two metrics")
    return problems


def sync(
    organization_id: int,
    integrations: list[IntegrationSpec],
    metrics: list[MetricSpec],
    component_ids: dict[str, int],
    *,
    prune: bool,
    advance: Callable[[int], object],
) -> tuple[int, int]:
    """Upsert the organization's integrations and metrics (by key) inside the caller's
    transaction, as the file's (owner ``file``, one more version); with ``prune``, delete those not
    named that the file made. Returns (deleted integrations, deleted metrics).

    One made through the API (owner ``api``, `pulse.api`) is the file's again once the file names
    it; one the file does not name is left alone, pruned or not, and so is what it needs: a pruned
    integration an API's metric uses, a pruned metric an API's calculated metric reads, stays."""
    for integration in integrations:
        settings = {**integration_fields(integration), "owner": "file"}
        (
            Integration.insert(organization=organization_id, key=integration.key, **settings)
            .on_conflict(
                conflict_target=[Integration.organization, Integration.key],
                update={**settings, "updated_at": utcnow(), "version": Integration.version + 1},
            )
            .execute()
        )
    integration_ids = {
        i.key: i.id
        for i in Integration.select(Integration.id, Integration.key).where(Integration.organization == organization_id)
    }
    existing = {q.key: q for q in MetricsQuery.select().where(MetricsQuery.organization == organization_id)}
    for metric in metrics:
        fields = metric_fields(metric, integration_ids[metric.integration], component_ids.get(metric.component or ""))
        write_metric(organization_id, metric.key, {**fields, "owner": "file"}, existing.get(metric.key))
        advance(1)
    if not prune:
        return 0, 0
    read_by_the_api = (
        CalculatedMetricVariable.select(CalculatedMetricVariable.metrics_query)
        .join(CalculatedMetric, on=CalculatedMetricVariable.calculated_metric == CalculatedMetric.id)
        .where(CalculatedMetric.owner == "api", CalculatedMetricVariable.metrics_query.is_null(False))
    )
    metrics_deleted = (
        MetricsQuery.delete()
        .where(
            MetricsQuery.organization == organization_id,
            MetricsQuery.key.not_in([m.key for m in metrics] or [""]),
            MetricsQuery.owner == "file",
            MetricsQuery.id.not_in(read_by_the_api),
        )
        .execute()
    )
    used_by_the_api = MetricsQuery.select(MetricsQuery.integration).where(MetricsQuery.owner == "api")
    integrations_deleted = (
        Integration.delete()
        .where(
            Integration.organization == organization_id,
            Integration.key.not_in([i.key for i in integrations] or [""]),
            Integration.owner == "file",
            Integration.id.not_in(used_by_the_api),
        )
        .execute()
    )
    return integrations_deleted, metrics_deleted


def integration_fields(integration: IntegrationSpec) -> dict[str, Any]:
    """An integration's columns but its key (and owner)."""
    return {"type": integration.type, "settings": integration.settings()}


def integration_document(row: Integration) -> dict[str, Any]:
    """The integration as a configuration file declares it (what `IntegrationSpec` reads back as
    what is stored), credentials included, so that a change to some of its fields (the API's
    PATCH) is validated whole."""
    return {"key": row.key, "type": row.type, **row.settings}


def metric_fields(metric: MetricSpec, integration_id: int, component_id: int | None) -> dict[str, Any]:
    """A metric's columns but its key (and owner), given the ids of the integration and the
    component it names."""
    return {
        "integration": integration_id,
        "component": component_id,
        "name": metric.name,
        "query": metric.query,
        "options": metric.options(),
        "unit": metric.unit,
        "interval_seconds": round(metric.interval.total_seconds()),
        **Thresholds.of(metric.thresholds, metric.no_data).fields(),
        "paused": metric.paused,
    }


def write_metric(organization_id: int, key: str, fields: dict[str, Any], current: MetricsQuery | None) -> int:
    """Insert the metric ``key`` (``current`` None) or update ``current`` (one more version) with
    ``fields``; a new interval, or a metric unpaused, is polled anew (``next_poll_at`` cleared).
    Returns its id."""
    if current is None:
        return MetricsQuery.insert(organization=organization_id, key=key, **fields).execute()
    rescheduled = fields["interval_seconds"] != current.interval_seconds or (current.paused and not fields["paused"])
    changed = {
        **fields,
        "updated_at": utcnow(),
        "version": MetricsQuery.version + 1,
        **({"next_poll_at": None} if rescheduled else {}),
    }
    MetricsQuery.update(**changed).where(MetricsQuery.id == current.id).execute()
    return current.id


def metric_document(row: MetricsQuery, integration: str, component: str | None) -> dict[str, Any]:
    """The metric as a configuration file declares it, ``integration`` and ``component`` the keys
    of those it names (see `integration_document`)."""
    found = {
        "key": row.key,
        "name": row.name,
        "integration": integration,
        "query": row.query,
        **row.options,
        "interval": f"{row.interval_seconds}s",
        "unit": row.unit,
        "thresholds": declared(row),
        "no_data": row.no_data,
        "paused": row.paused,
    }
    return {**found, "component": component} if component is not None else found
