"""``/api/v1/alert-sources`` and ``/api/v1/alert-sources/{key}``: the token's organization's alert
sources, listed by key a page at a time, filtered by ``kind``, and made, replaced, patched and
deleted as the configuration file declares them (`pulse.sources.spec.AlertSourceSpec`), by
`pulse.api.resources`.

A source's ``token`` and its signature's ``secret`` are write-only: never answered, logged nor
repeated in a problem. The token is kept as its digest alone, as the file's is: a POST gives it, a
PUT or PATCH without one keeps the token the source has (the URL its sender knows). A source is
shown with its routes and, when its requests are signed, the headers they are signed in
(``signature``; null when they are not). Its escalation policies are named by key, here and in a
body (422 naming the field for a key the organization does not have). A source made, changed or
deleted here is taken, or refused, by the next request to ``/alerts/<kind>``: `pulse serve` looks
each token up as it arrives (`pulse.sources.record`).
"""

from __future__ import annotations

from typing import Annotated

import peewee
from pydantic import AfterValidator, Field
from typing_extensions import TypedDict

from pulse.api.resources import OWNER, Filter, Resource, referenced
from pulse.api.writes import invalid
from pulse.inbound.tokens import digest, secret
from pulse.models import AlertSource, EscalationPolicy, utcnow
from pulse.models.alert_source import KINDS
from pulse.sources import spec as sources


class AlertSourceBody(sources.AlertSourceSpec):
    """An alert source as the configuration file declares it, its ``token`` optional: a PUT or PATCH
    without one keeps the source's (a POST needs one)."""

    token: Annotated[str, AfterValidator(secret)] | None = Field(None, repr=False)  # type: ignore[assignment]


class RouteView(TypedDict):
    match: dict[str, str]
    escalation_policy: str


class SignatureView(TypedDict):
    header: str
    timestamp_header: str | None


class AlertSourceView(TypedDict):
    key: str
    name: str
    kind: str
    escalation_policy: str
    routes: list[RouteView]
    signature: SignatureView | None


class AlertSourcePage(TypedDict):
    alert_sources: list[AlertSourceView]
    next_cursor: str | None


def shown(row: AlertSource) -> AlertSourceView:
    *chosen, every = row.routes
    signature: SignatureView | None = None
    if row.signature is not None:
        signature = {"header": row.signature["header"], "timestamp_header": row.signature["timestamp_header"]}
    return {
        "key": row.key,
        "name": row.name,
        "kind": row.kind,
        "escalation_policy": every["policy"],
        "routes": [{"match": r["match"], "escalation_policy": r["policy"]} for r in chosen],
        "signature": signature,
    }


def _write(organization_id: int, spec: AlertSourceBody, current: AlertSource | None) -> int:
    _named_policies(organization_id, spec)
    if spec.token is not None:
        token = digest(spec.token)
    elif current is not None:
        token = current.token_sha256
    else:
        raise invalid("alert source", ["$.token: Field required"])
    fields = {**sources.source_fields(spec), "token_sha256": token, "owner": OWNER}
    try:
        if current is None:
            return AlertSource.insert(organization=organization_id, key=spec.key, **fields).execute()
        changes = {**fields, "updated_at": utcnow(), "version": AlertSource.version + 1}
        AlertSource.update(**changes).where(AlertSource.id == current.id).execute()
    except peewee.IntegrityError as e:
        if "token_sha256" in str(e):
            raise invalid("alert source", ["$.token: another alert source has this token"]) from None
        raise
    return current.id


def _named_policies(organization_id: int, spec: AlertSourceBody) -> None:
    """422 naming each field of ``spec`` that names an escalation policy the organization does not
    have; those it has are locked until the write commits, as every reference of the API is
    (`pulse.api.resources.referenced`), so a policy is not deleted from under it."""
    named = [(f"$.{where}", key) for where, key in spec.policies()]
    problems = referenced(EscalationPolicy, organization_id, named, "escalation policy")[1]
    if problems:
        raise invalid("alert source", problems)


ALERT_SOURCES = Resource(
    name="alert source",
    plural="alert-sources",
    model=AlertSource,
    identifier="key",
    spec=AlertSourceBody,
    view=AlertSourceView,
    page=AlertSourcePage,
    show=lambda rows: [shown(row) for row in rows],
    document=sources.source_document,
    write=_write,
    existing=lambda organization_id, spec: AlertSource.get_or_none(
        AlertSource.organization == organization_id, AlertSource.key == spec.key
    ),
    filters=(Filter("kind", "Only the sources of this kind.", allowed=KINDS, column=AlertSource.kind),),
    secrets=("token", "signature"),
    example={
        "key": "grafana",
        "name": "Grafana",
        "kind": "grafana",
        "escalation_policy": "default",
        "routes": [{"match": {"team": "database"}, "escalation_policy": "dba"}],
        "signature": {"header": "X-Grafana-Alerting-Signature", "timestamp_header": None},
    },
    body_example={
        "key": "grafana",
        "kind": "grafana",
        "token": "gr4fana-alerts-t0ken-0f-32-characters",
        "escalation_policy": "default",
        "routes": [{"match": {"team": "database"}, "escalation_policy": "dba"}],
        "signature": {"secret": "a-secret-of-16-or-more"},
    },
    patch_example={"routes": [], "signature": {"timestamp_header": "X-Grafana-Alerting-Timestamp"}},
)
