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

from pulse.components.thresholds import Thresholds, ThresholdsSpec
from pulse.metrics.integrations import INTEGRATIONS
from pulse.metrics.integrations.base import AGGREGATES
from pulse.metrics.integrations.datadog import SITES
from pulse.metrics.integrations.newrelic import REGIONS
from pulse.models import Integration, MetricsQuery, utcnow
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
        if metric.integration not in kinds:
            problems.append(f"metrics[{index}] names the integration {metric.integration!r}, which is not declared")
        else:
            kind = kinds[metric.integration]
            for option in sorted(set(metric.options()) - set(INTEGRATIONS[kind].options)):
                problems.append(f"metrics[{index}]: a {kind} integration's metric does not take {option}")
            check = INTEGRATIONS[kind].check
            try:
                if check is not None:
                    check(metric.query, metric.options())
            except ValueError as e:
                problems.append(f"metrics[{index}].query: {e}")
        if metric.component is not None:
            if metric.component not in metric_components:
                problems.append(
                    f"metrics[{index}] drives the component {metric.component!r}, which must be declared with "
                    "`type: metric`"
                )
            elif metric.component in driven:
                problems.append(f"metrics[{index}]: the component {metric.component!r} is driven by two metrics")
            driven.add(metric.component)
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
    transaction; with ``prune``, delete those not named. Returns (deleted integrations, deleted
    metrics)."""
    for integration in integrations:
        settings: dict[str, Any] = {"type": integration.type, "settings": integration.settings()}
        (
            Integration.insert(organization=organization_id, key=integration.key, **settings)
            .on_conflict(
                conflict_target=[Integration.organization, Integration.key], update={**settings, "updated_at": utcnow()}
            )
            .execute()
        )
    integration_ids = {
        i.key: i.id
        for i in Integration.select(Integration.id, Integration.key).where(Integration.organization == organization_id)
    }
    existing = {q.key: q for q in MetricsQuery.select().where(MetricsQuery.organization == organization_id)}
    for metric in metrics:
        fields: dict[str, Any] = {
            "integration": integration_ids[metric.integration],
            "component": component_ids.get(metric.component) if metric.component else None,
            "name": metric.name,
            "query": metric.query,
            "options": metric.options(),
            "unit": metric.unit,
            "interval_seconds": round(metric.interval.total_seconds()),
            **Thresholds.of(metric.thresholds, metric.no_data).fields(),
            "paused": metric.paused,
        }
        current = existing.get(metric.key)
        if current is None:
            MetricsQuery.insert(organization=organization_id, key=metric.key, **fields).execute()
        else:
            rescheduled = fields["interval_seconds"] != current.interval_seconds or (
                current.paused and not metric.paused
            )
            changed = {**fields, "updated_at": utcnow(), **({"next_poll_at": None} if rescheduled else {})}
            MetricsQuery.update(**changed).where(MetricsQuery.id == current.id).execute()
        advance(1)
    if not prune:
        return 0, 0
    metrics_deleted = (
        MetricsQuery.delete()
        .where(MetricsQuery.organization == organization_id, MetricsQuery.key.not_in([m.key for m in metrics] or [""]))
        .execute()
    )
    integrations_deleted = (
        Integration.delete()
        .where(
            Integration.organization == organization_id, Integration.key.not_in([i.key for i in integrations] or [""])
        )
        .execute()
    )
    return integrations_deleted, metrics_deleted
