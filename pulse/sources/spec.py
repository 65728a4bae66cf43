"""Alert sources in the configuration file, written with the rest of it (`pulse.configfile`):

    alert_sources:
      - key: prometheus
        name: Prometheus                 # optional: the key
        kind: alertmanager               # events, alertmanager or grafana
        token: ${PROMETHEUS_ALERTS_TOKEN}
        escalation_policy: default       # pages every alert no route below chooses
        routes:                          # optional: the first whose labels all match wins
          - {match: {team: database}, escalation_policy: dba}
      - key: grafana
        kind: grafana
        token: ${GRAFANA_ALERTS_TOKEN}
        escalation_policy: default
        signature:                       # optional, grafana only: its webhook's HMAC signature
          secret: ${GRAFANA_SIGNING_SECRET}
          header: X-Grafana-Alerting-Signature   # optional: Grafana's default
          timestamp_header: X-Grafana-Alerting-Timestamp   # optional: as set in Grafana, if set

The token comes from an environment variable, as a heartbeat's does (applying the file again keeps
the URL the sender knows); Pulse keeps only its SHA-256. Routes match an alert's labels: a group's
common labels for Alertmanager and Grafana, an event's severity, source, component, group and class
for the events API (`pulse.sources.formats`).

A grafana source with a ``signature`` takes only requests signed with its secret
(`pulse.sources.signature`). The secret, like the token, comes from an environment variable; Pulse
keeps it, as it needs it to check each request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from pulse.inbound.tokens import digest, secret
from pulse.models import AlertSource, utcnow
from pulse.models.alert_source import GRAFANA, KINDS
from pulse.sources.signature import HEADER
from pulse.spec import Slug, Strict

if TYPE_CHECKING:
    Kind = str
else:
    Kind = Literal[KINDS]

LabelName = Annotated[str, Field(min_length=1, max_length=200)]
HeaderName = Annotated[str, Field(pattern=r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")]  # RFC 9110's token


class RouteSpec(Strict):
    match: dict[LabelName, Annotated[str, Field(max_length=1000)]] = Field(min_length=1, max_length=20)
    escalation_policy: Slug


class SignatureSpec(Strict):
    secret: str = Field(min_length=16, max_length=256, repr=False)
    header: HeaderName = HEADER
    timestamp_header: HeaderName | None = None


class AlertSourceSpec(Strict):
    key: Slug
    name: str | None = Field(None, min_length=1, max_length=200)
    kind: Kind
    token: Annotated[str, AfterValidator(secret)] = Field(repr=False)
    escalation_policy: Slug
    routes: list[RouteSpec] = Field(default_factory=list, max_length=100)
    signature: SignatureSpec | None = None

    @model_validator(mode="after")
    def _signed_by_grafana(self) -> AlertSourceSpec:
        if self.signature is not None and self.kind != GRAFANA:
            raise ValueError("only a grafana source takes a signature (Grafana's webhook HMAC)")
        return self

    def stored_routes(self) -> list[dict[str, Any]]:
        """The routes as a source row keeps them, the policy for every other alert last."""
        chosen = [{"match": r.match, "policy": r.escalation_policy} for r in self.routes]
        return [*chosen, {"match": {}, "policy": self.escalation_policy}]

    def policies(self) -> list[tuple[str, str]]:
        """The escalation policies it names, each with its field's path (``routes[0].escalation_policy``)."""
        named = [("escalation_policy", self.escalation_policy)]
        return named + [(f"routes[{j}].escalation_policy", r.escalation_policy) for j, r in enumerate(self.routes)]


def references(sources: list[AlertSourceSpec], policies: set[str]) -> list[str]:
    """The escalation policies sources name that the organization does not declare."""
    return [
        f"alert_sources[{i}].{where} names {key!r}, which is not in escalation_policies"
        for i, source in enumerate(sources)
        for where, key in source.policies()
        if key not in policies
    ]


def sync(organization_id: int, sources: list[AlertSourceSpec], *, prune: bool) -> int:
    """Upsert the organization's alert sources (by key) inside the caller's transaction, as the
    file's (owner ``file``, one more version); with ``prune``, delete those not named that the file
    made (with their alerts). Returns how many were deleted.

    One made through the API (owner ``api``, `pulse.api`) is the file's again once the file names
    it; one the file does not name is left alone, pruned or not."""
    for source in sources:
        fields = {**source_fields(source), "token_sha256": digest(source.token), "owner": "file"}
        (
            AlertSource.insert(organization=organization_id, key=source.key, **fields)
            .on_conflict(
                conflict_target=[AlertSource.organization, AlertSource.key],
                update={**fields, "updated_at": utcnow(), "version": AlertSource.version + 1},
            )
            .execute()
        )
    if not prune:
        return 0
    named = [source.key for source in sources] or [""]
    return (
        AlertSource.delete()
        .where(
            AlertSource.organization == organization_id,
            AlertSource.key.not_in(named),
            AlertSource.owner == "file",
        )
        .execute()
    )


def source_fields(source: AlertSourceSpec) -> dict[str, Any]:
    """A source's columns but its key, its token's digest and its owner."""
    return {
        "name": source.name or source.key,
        "kind": source.kind,
        "routes": source.stored_routes(),
        "signature": source.signature.model_dump() if source.signature else None,
    }


def source_document(row: AlertSource) -> dict[str, Any]:
    """The source as a configuration file declares it (what `AlertSourceSpec` reads back as what is
    stored), its signing secret included, so that a change to some of its fields (the API's PATCH)
    is validated whole. Its token is not in it: only its digest is kept."""
    *chosen, every = row.routes
    found = {"key": row.key, "name": row.name, "kind": row.kind, "escalation_policy": every["policy"]}
    found["routes"] = [{"match": r["match"], "escalation_policy": r["policy"]} for r in chosen]
    return found if row.signature is None else {**found, "signature": row.signature}
