"""Components in the configuration file: what is checked, how often, judged by which conditions,
and their maintenance windows; written with the rest of the file (`pulse.configfile`).

    components:
      - key: api
        name: Public API
        url: https://api.acme.example/health
        interval: 30s
        conditions: ["[STATUS] == 200", "[BODY].status == UP"]
        repeat_while_down: 1h          # optional: tell the channels again, every hour, while it is down
        certificate_warnings: [14d, 3d]   # the default: tell the channels 14 and 3 days before the
                                          # TLS certificate expires (pulse.uptime.expiry); [] for none
        domain_warnings: [30d, 7d]        # opt-in: 30 and 7 days before acme.example's registration
                                          # expires, as its registry's RDAP says (pulse.uptime.domains)
        locations: [eu, us, asia]         # opt-in: checked from these locations (pulse.locations),
        quorum: 2                         # down when 2 of them see it failing (default: a majority)
      - {key: db, name: Database, kind: tcp, host: db.internal, port: 5432, interval: 30s,
         conditions: ["[CONNECTED] == true", "[RESPONSE_TIME] < 300"]}

An endpoint's ``kind`` (http by default) says how it is checked and which fields it has beside
these: `pulse.uptime.kinds`.

A component of type ``heartbeat`` is pinged rather than checked: `pulse.heartbeats.spec`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from pulse.config import location_name
from pulse.heartbeats import spec as heartbeats
from pulse.inbound.tokens import secret
from pulse.models import Component, EscalationPolicy, ExtractedValue, MaintenanceWindow, utcnow
from pulse.spec import DURATION_SCHEMA, Slug, Strict, parse_duration, show_duration, span, within
from pulse.uptime import conditions, domains, expiry, rdap
from pulse.uptime.kinds import KINDS, dns, http, icmp, tcp, tls

_VALUE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

Interval = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    DURATION_SCHEMA,
    AfterValidator(within(timedelta(seconds=15), timedelta(hours=24))),
]
Repeat = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    DURATION_SCHEMA,
    AfterValidator(within(timedelta(minutes=5), timedelta(days=7))),
]
Ahead = Annotated[timedelta, BeforeValidator(parse_duration), DURATION_SCHEMA]  # how long before an expiry
LocationName = Annotated[str, AfterValidator(location_name)]
MAX_LOCATIONS = 16
Timeout = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    DURATION_SCHEMA,
    AfterValidator(within(timedelta(seconds=1), timedelta(seconds=60))),
]


class Maintenance(Strict):
    start: datetime
    end: datetime
    title: str = Field("", max_length=200)

    @model_validator(mode="after")
    def _ordered(self) -> Maintenance:
        span(self.start, self.end)
        return self


class ComponentSpec(http.Fields, tcp.Fields, dns.Fields, icmp.Fields, tls.Fields, Strict):
    """A component. An endpoint is checked by its check ``kind`` (`pulse.uptime.kinds`), whose
    fields it has beside its own.

    The field is ``kind``, not ``type``: ``type`` is what the component is on a status page
    (endpoint, metric, service, heartbeat), ``kind`` how an endpoint is checked (http, tcp); and
    not ``check``, which reads as a yes-or-no and is already the command (`pulse check`).
    """

    key: Slug
    name: str = Field(min_length=1, max_length=200)
    type: Literal["endpoint", "metric", "service", "heartbeat"] = "endpoint"
    kind: str = "http"
    interval: Interval = timedelta(seconds=60)
    timeout: Timeout = timedelta(seconds=10)
    conditions: list[str] = Field(min_length=1, max_length=20)
    failure_threshold: int = Field(3, ge=1, le=100)
    success_threshold: int = Field(2, ge=1, le=100)
    auto_incident: bool = True
    paused: bool = False
    extract: dict[str, str] = Field(default_factory=dict, max_length=20)
    maintenance: list[Maintenance] = Field(default_factory=list, max_length=100)
    escalation_policy: Slug | None = None  # pages the on-call responder for its incidents (pulse.oncall.spec)
    repeat_while_down: Repeat | None = None  # re-notify the channels this often while an incident is open
    certificate_warnings: list[Ahead] = Field(
        default_factory=lambda: [timedelta(days=days) for days in expiry.DEFAULT_DAYS], max_length=expiry.MAX_WARNINGS
    )  # warn the channels this long before the TLS certificate expires
    domain_warnings: list[Ahead] = Field(default_factory=list, max_length=expiry.MAX_WARNINGS)  # before the domain
    locations: list[LocationName] = Field(default_factory=list, max_length=MAX_LOCATIONS)  # checked from these
    quorum: int | None = Field(None, ge=1)  # of its locations, for a verdict; None: a majority
    period: heartbeats.Duration | None = None  # a heartbeat's (pulse.heartbeats.spec), and the next four
    cron: heartbeats.Cron | None = None
    time_zone: heartbeats.TimeZone | None = None
    grace: heartbeats.Duration | None = None
    token: Annotated[str, AfterValidator(secret)] | None = Field(None, repr=False)

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        """A heartbeat's defaults; the conditions of the endpoint's kind when the file gives none."""
        if not isinstance(data, dict):
            return data
        if data.get("type") == "heartbeat":
            data = heartbeats.DEFAULTS | data
        named = data.get("kind", "http")
        kind = KINDS.get(named) if isinstance(named, str) else None
        if "conditions" not in data and kind is not None:
            data = data | {"conditions": list(kind.default_conditions)}
        return data

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        if value not in KINDS:
            raise ValueError(f"{value!r} is not a check kind (use {', '.join(KINDS)})")
        return value

    @field_validator("conditions")
    @classmethod
    def _conditions(cls, value: list[str]) -> list[str]:
        for text in value:
            conditions.parse(text)  # ConditionError is a ValueError: it names the condition and the reason
        return value

    @field_validator("extract")
    @classmethod
    def _extract(cls, value: dict[str, str]) -> dict[str, str]:
        for name, path in value.items():
            if not _VALUE_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid value name (letters, digits, underscores)")
            conditions.parse_path(path)
        return value

    @field_validator("certificate_warnings", "domain_warnings")
    @classmethod
    def _certificate_warnings(cls, value: list[timedelta]) -> list[timedelta]:
        for warning in value:
            if warning % timedelta(days=1):
                raise ValueError(f"{show_duration(warning)} is not a whole number of days (write e.g. 14d)")
            if not timedelta(days=1) <= warning <= timedelta(days=365):
                raise ValueError(f"must be between 1d and 365d, not {warning / timedelta(days=1):g}d")
        if len(set(value)) < len(value):
            raise ValueError("the same number of days is given twice")
        return value

    @model_validator(mode="after")
    def _endpoint(self) -> ComponentSpec:
        if self.type == "endpoint":
            self._check_kind()
            self._check_domain()
            self._check_locations()
        elif self.locations or self.quorum is not None:
            raise ValueError("only an endpoint is checked from locations")
        elif "domain_warnings" in self.model_fields_set:
            raise ValueError("only an endpoint has domain_warnings (its host names the domain)")
        elif "kind" in self.model_fields_set:
            raise ValueError("only an endpoint has a check kind")
        elif "certificate_warnings" in self.model_fields_set:
            raise ValueError("only an endpoint has certificate_warnings (its checks see the certificate)")
        elif self.ca is not None or self.ca_file is not None:
            raise ValueError("only an endpoint has a ca or ca_file (its checks verify the certificate)")
        if self.type == "heartbeat" and (self.url or not self.token):
            raise ValueError("a heartbeat needs a token and has no url")
        if self.type == "heartbeat" and (self.period is None) == (self.cron is None):
            raise ValueError("a heartbeat needs either a period or a cron expression (cron), not both")
        if self.time_zone is not None and self.cron is None:
            raise ValueError("a time_zone goes with a cron expression (cron); a period needs none")
        if self.type != "heartbeat" and (self.period or self.cron or self.grace or self.token):
            raise ValueError("only a heartbeat has a period, a cron expression, a grace and a token")
        return self

    def _check_kind(self) -> None:
        """Refuse what the endpoint's kind does not have (another kind's fields, placeholders its
        checks cannot resolve) and what its kind finds wrong, every problem on its own line."""
        kind = KINDS[self.kind]
        own = set(kind.fields.model_fields)
        others: dict[str, list[str]] = {}  # a field given that this kind lacks: the kinds that have it
        for other in KINDS.values():
            for name in other.fields.model_fields:
                if name in self.model_fields_set and name not in own:
                    others.setdefault(name, []).append(other.name)
        problems = [
            f"{name} is a field of {_either(kinds)} checks, not of {kind.name} ones" for name, kinds in others.items()
        ]
        problems += kind.problems(self)
        for index, text in enumerate(self.conditions):
            unknown = sorted(conditions.parse(text).placeholders - kind.placeholders)
            if unknown:
                problems.append(
                    f"conditions[{index}]: {', '.join(unknown)} is not a placeholder of {kind.name} checks"
                    f" (use {', '.join(sorted(kind.placeholders))})"
                )
        if problems:
            raise ValueError("\n".join(dict.fromkeys(problems)))

    def _check_locations(self) -> None:
        if len(set(self.locations)) < len(self.locations):
            raise ValueError("locations: a location is listed twice")
        if self.quorum is not None and not self.locations:
            raise ValueError("a quorum goes with locations (the locations that must agree)")
        if self.quorum is not None and self.quorum > len(self.locations):
            raise ValueError(f"quorum {self.quorum} is more than the {len(self.locations)} locations listed")
        if self.locations and self.extract:
            raise ValueError("extract is for checks made by the central workers, not from locations")

    def _check_domain(self) -> None:
        """Domain warnings need a kind whose target has a host, and a host with a registered domain."""
        if not self.domain_warnings:
            return
        if self.kind not in domains.KINDS:
            raise ValueError(f"domain_warnings are for {_either(list(domains.KINDS))} checks, not {self.kind} ones")
        host = expiry.host(self)
        if host is not None and self.domain() is None:
            if rdap.is_address(host):
                raise ValueError(f"domain_warnings: {host} is an IP address, which has no domain to expire")
            raise ValueError(
                f"domain_warnings: {host} has no registered domain (e.g. api.acme.example has acme.example)"
            )

    def domain(self) -> str | None:
        """The registered domain whose expiry it warns of, when it has domain warnings."""
        host = expiry.host(self) if self.domain_warnings else None
        return rdap.registered(host) if host else None

    def monitor(self) -> heartbeats.Monitor | None:
        """A heartbeat's monitor; None for another type."""
        if self.type != "heartbeat" or not self.token or not self.grace:
            return None
        period = None if self.period is None else round(self.period.total_seconds())
        return heartbeats.Monitor(
            self.token, period, self.cron, self.time_zone or "UTC", round(self.grace.total_seconds())
        )


def _either(names: list[str]) -> str:
    """``tcp``, ``tcp or tls``, ``tcp, icmp or tls``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def sync(
    organization_id: int,
    components: list[ComponentSpec],
    *,
    policy_ids: dict[str, int],
    prune: bool,
    advance: Callable[[int], object],
) -> tuple[int, int, int]:
    """Upsert the organization's components (by key) with their extracted values and maintenance
    windows, inside the caller's transaction, calling ``advance(1)`` after each; with ``prune``,
    delete those not named that the file made. ``policy_ids`` are the escalation policies' ids by
    key. Returns (created, updated, deleted).

    A component made through the API (owner ``api``, `pulse.api`) is the file's again once the file
    names it; one the file does not name is left alone, pruned or not."""
    existing = {c.key: c for c in Component.select().where(Component.organization == organization_id)}
    created = 0
    for spec in components:
        policy = policy_ids[spec.escalation_policy] if spec.escalation_policy else None
        created += upsert(organization_id, spec, existing.get(spec.key), policy, owner="file")
        advance(1)
    deleted = 0
    if prune:
        named = [c.key for c in components]
        deleted = (
            Component.delete()
            .where(
                Component.organization == organization_id,
                Component.key.not_in(named or [""]),
                Component.owner == "file",
            )
            .execute()
        )
    return created, len(components) - created, deleted


def component_ids(organization_id: int) -> dict[str, int]:
    """The organization's components: id by key."""
    query = Component.select(Component.id, Component.key).where(Component.organization == organization_id)
    return {c.key: c.id for c in query}


def document(row: Component) -> dict[str, Any]:
    """The component as a configuration file declares it (what `ComponentSpec` reads back as what
    is stored), so that a change to some of its fields (the API's PATCH) is validated whole. A
    heartbeat's token is not in it: only its digest is kept."""
    found: dict[str, Any] = {
        "key": row.key,
        "name": row.name,
        "type": row.type.lower(),
        "interval": row.interval_seconds,
        "timeout": row.timeout_ms / 1000,
        "failure_threshold": row.failure_threshold,
        "success_threshold": row.success_threshold,
        "auto_incident": row.auto_incident,
        "paused": row.paused,
        "extract": dict(row.extract),
        "maintenance": [
            {"start": m.starts_at.isoformat(), "end": m.ends_at.isoformat(), "title": m.title}
            for m in MaintenanceWindow.select()
            .where(MaintenanceWindow.component == row.id)
            .order_by(MaintenanceWindow.id)
        ],
    }
    if row.conditions:  # none: the kind's defaults, as a file that gives none
        found["conditions"] = list(row.conditions)
    if row.escalation_policy_id is not None:
        found["escalation_policy"] = EscalationPolicy.get_by_id(row.escalation_policy_id).key
    if row.repeat_seconds is not None:
        found["repeat_while_down"] = row.repeat_seconds
    if row.type == "ENDPOINT":
        found |= {
            "kind": row.kind,
            **_target(row),
            "certificate_warnings": [f"{d}d" for d in row.certificate_warning_days],
        }
        found |= {"domain_warnings": [f"{d}d" for d in row.domain_warning_days], "locations": list(row.locations)}
        if row.quorum is not None:
            found["quorum"] = row.quorum
    if row.type == "HEARTBEAT":
        found |= heartbeats.document(row.id)
    return found


def _target(row: Component) -> dict[str, Any]:
    """An endpoint's check fields, by its kind, as the file gives them."""
    fields = dict(row.target or {})
    if row.kind == "http":
        http_fields = {"url": row.url, "method": row.method, "headers": dict(row.headers), "body": row.body}
        fields = {**http_fields, "forward_headers": row.forward_headers, "ca": fields.get("ca")}
    elif row.kind == "tcp" and not fields.get("tls"):
        fields.pop("verify", None)  # verify goes with tls: true
    return {name: value for name, value in fields.items() if value is not None}


def upsert(
    organization_id: int, spec: ComponentSpec, current: Component | None, policy: int | None, *, owner: str
) -> bool:
    """Insert or update one component (``current``, None for a new one), written by ``owner``
    (``file`` or ``api``) and counting one more version; True when it is new."""
    fields = {
        "owner": owner,
        "name": spec.name,
        "type": spec.type.upper(),
        "kind": spec.kind,
        **KINDS[spec.kind].stored(spec),
        "interval_seconds": round(spec.interval.total_seconds()),
        "timeout_ms": round(spec.timeout.total_seconds() * 1000),
        "conditions": spec.conditions,
        "failure_threshold": spec.failure_threshold,
        "success_threshold": spec.success_threshold,
        "auto_incident": spec.auto_incident,
        "paused": spec.paused,
        "extract": spec.extract,
        "escalation_policy": policy,
        "repeat_seconds": round(spec.repeat_while_down.total_seconds()) if spec.repeat_while_down else None,
        "certificate_warning_days": sorted({w // timedelta(days=1) for w in spec.certificate_warnings}, reverse=True),
        "domain_warning_days": sorted({w // timedelta(days=1) for w in spec.domain_warnings}, reverse=True),
        "domain": spec.domain(),
        "locations": spec.locations,
        "quorum": spec.quorum,
    }
    if current is None:
        # next_check_at stays empty: the scheduler gives it a first slot within seconds.
        component_id = Component.insert(organization=organization_id, key=spec.key, **fields).execute()
    else:
        component_id = current.id
        rescheduled = fields["interval_seconds"] != current.interval_seconds or (current.paused and not spec.paused)
        changes = {
            **fields,
            "updated_at": utcnow(),
            "version": Component.version + 1,
            **({"next_check_at": None} if rescheduled else {}),
        }
        Component.update(**changes).where(Component.id == component_id).execute()
    _sync_extracted(component_id, spec.extract)
    heartbeats.sync(component_id, spec.monitor())
    MaintenanceWindow.delete().where(MaintenanceWindow.component == component_id).execute()
    if spec.maintenance:
        MaintenanceWindow.insert_many(
            [
                {"component": component_id, "starts_at": m.start, "ends_at": m.end, "title": m.title}
                for m in spec.maintenance
            ]
        ).execute()
    return current is None


def _sync_extracted(component_id: int, extract: dict[str, str]) -> None:
    ExtractedValue.delete().where(
        ExtractedValue.component == component_id, ExtractedValue.name.not_in(list(extract) or [""])
    ).execute()
    for name, path in extract.items():
        (
            ExtractedValue.insert(component=component_id, name=name, path=path)
            .on_conflict(
                conflict_target=[ExtractedValue.component, ExtractedValue.name], update={ExtractedValue.path: path}
            )
            .execute()
        )
