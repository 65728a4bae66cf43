"""``/api/v1/integrations`` and ``/api/v1/integrations/{key}``: the token's organization's metrics
integrations, listed by key a page at a time, filtered by ``type``, and made, replaced, patched and
deleted as the configuration file declares them (`pulse.metrics.spec.IntegrationSpec`), by
`pulse.api.resources`.

Its credentials are write-only: never answered, logged nor repeated in a problem, and ``credentials``
says which are set. They are ``bearer_token``, ``password``, ``api_key``, ``app_key`` and the
``url``: a URL may carry a user and password or a token in its path or query, and Pulse never
echoes one (`pulse.spec.http_url`); it is shown as its ``destination``, its host and the first 8
hex digits of its MD5, to tell two apart. ``username``, ``site``, ``region``, ``account_id`` and
``datasource`` are shown. An integration a metric uses is not deleted (409 naming the metrics),
nor given a type that would not take its metrics' options or queries (422, as the file says it).
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from pulse.api.resources import OWNER, Filter, Resource
from pulse.api.writes import invalid
from pulse.metrics import spec as metrics
from pulse.metrics.integrations import INTEGRATIONS as KINDS
from pulse.models import Integration, MetricsQuery, utcnow
from pulse.notifications.spec import masked

CREDENTIALS = ("bearer_token", "password", "api_key", "app_key")
SECRETS = ("url", *CREDENTIALS)


class Credentials(TypedDict):
    bearer_token: bool
    password: bool
    api_key: bool
    app_key: bool


class IntegrationView(TypedDict):
    key: str
    type: str
    destination: str | None
    site: str | None
    region: str | None
    account_id: int | None
    datasource: str | None
    username: str | None
    credentials: Credentials


class IntegrationPage(TypedDict):
    integrations: list[IntegrationView]
    next_cursor: str | None


def shown(rows: list[Integration]) -> list[IntegrationView]:
    return [_shown(row.key, row.type, row.settings) for row in rows]


def _shown(key: str, kind: str, settings: dict[str, Any]) -> IntegrationView:
    url = settings.get("url")
    return {
        "key": key,
        "type": kind,
        "destination": masked(url) if url else None,
        "site": settings.get("site"),
        "region": settings.get("region"),
        "account_id": settings.get("account_id"),
        "datasource": settings.get("datasource"),
        "username": settings.get("username"),
        "credentials": {
            "bearer_token": bool(settings.get("bearer_token")),
            "password": bool(settings.get("password")),
            "api_key": bool(settings.get("api_key")),
            "app_key": bool(settings.get("app_key")),
        },
    }


def _write(organization_id: int, spec: metrics.IntegrationSpec, current: Integration | None) -> int:
    if current is not None and spec.type != current.type:
        problems = _retyped(current, spec)
        if problems:
            raise invalid("integration", problems)
    fields = metrics.integration_fields(spec)
    if current is None:
        return Integration.insert(organization=organization_id, key=spec.key, owner=OWNER, **fields).execute()
    changes = {**fields, "owner": OWNER, "updated_at": utcnow(), "version": Integration.version + 1}
    Integration.update(**changes).where(Integration.id == current.id).execute()
    return current.id


def _retyped(current: Integration, spec: metrics.IntegrationSpec) -> list[str]:
    """What the metrics of ``current`` would be refused for by the file, were it of ``spec``'s
    type: an option or a query that type does not take (`pulse.metrics.spec.metric_references`'
    messages, each at ``$.type`` with the metric's key)."""
    problems = []
    for row in MetricsQuery.select().where(MetricsQuery.integration == current.id).order_by(MetricsQuery.key):
        metric = metrics.MetricSpec.model_validate(metrics.metric_document(row, spec.key, None))
        where = f"$.type (metric {row.key!r})"
        problems += metrics.metric_references(metric, {spec.key: spec.type}, set(), set(), where)
    return problems


def _referrers(row: Integration) -> list[str]:
    """The metrics that use the integration."""
    query = MetricsQuery.select(MetricsQuery.key).where(MetricsQuery.integration == row.id).order_by(MetricsQuery.key)
    return [f"metric {m.key!r}" for m in query]


INTEGRATIONS = Resource(
    name="integration",
    plural="integrations",
    model=Integration,
    identifier="key",
    spec=metrics.IntegrationSpec,
    view=IntegrationView,
    page=IntegrationPage,
    show=shown,
    document=metrics.integration_document,
    write=_write,
    existing=lambda organization_id, spec: Integration.get_or_none(
        Integration.organization == organization_id, Integration.key == spec.key
    ),
    referrers=_referrers,
    filters=(Filter("type", "Only the integrations of this type.", allowed=tuple(KINDS), column=Integration.type),),
    secrets=SECRETS,
    example=_shown("prom", "prometheus", {"url": "https://prometheus.acme.example", "bearer_token": "T0K3N"}),
    body_example={
        "key": "prom",
        "type": "prometheus",
        "url": "https://prometheus.acme.example",
        "bearer_token": "a-token-of-the-prometheus",
    },
    patch_example={"bearer_token": "the-next-token"},
)
