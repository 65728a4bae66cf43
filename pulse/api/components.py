"""``/api/v1/components`` and ``/api/v1/components/{key}``: the token's organization's
components, listed by key a page at a time, filtered by ``status``, ``type`` and ``kind``, and
made, replaced, patched and deleted as the configuration file declares them
(`pulse.uptime.spec.ComponentSpec`), by `pulse.api.resources`.

A component is shown with its check's public fields (``check``, for an ENDPOINT) and nothing that
may hold a secret: a header's name but never its value, no body, no tcp payload, no CA's PEM (only
whether it has one of its own), and a URL without its user, password, query or fragment.

``ca_file`` is refused: a file is read where `pulse apply` runs, and `pulse serve` reads none for a
client (``ca``, the PEM text, is the API's way). A heartbeat's token is write-only, and kept as its
digest alone: a PATCH of a heartbeat gives it again.
"""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlsplit

import peewee
from typing_extensions import TypedDict

from pulse.api.auth import Call
from pulse.api.resources import OWNER, Filter, Resource
from pulse.api.writes import invalid
from pulse.components.status import DEGRADED, MAINTENANCE, MAJOR_OUTAGE, OPERATIONAL, PARTIAL_OUTAGE
from pulse.models import Component, EscalationPolicy
from pulse.uptime import spec as uptime

STATUSES = (OPERATIONAL, DEGRADED, PARTIAL_OUTAGE, MAJOR_OUTAGE, MAINTENANCE)
TYPES = ("ENDPOINT", "METRIC", "SERVICE", "HEARTBEAT")
KINDS = ("http", "tcp", "dns", "icmp", "tls")  # pulse.uptime.kinds.KINDS, without loading each kind
#: What `shown` reads of a row: a listing loads these alone (not a component's conditions, body or
#: thresholds, whose JSON would be decoded for nothing: half a page's CPU).
SHOWN = (
    Component.id,
    Component.version,
    Component.key,
    Component.name,
    Component.type,
    Component.kind,
    Component.status,
    Component.status_since,
    Component.paused,
    Component.interval_seconds,
    Component.last_checked_at,
    Component.url,
    Component.method,
    Component.headers,
    Component.forward_headers,
    Component.target,
)


class HttpCheck(TypedDict):
    url: str
    method: str
    header_names: list[str]
    forward_headers: bool
    own_ca: bool


class TcpCheck(TypedDict):
    host: str | None
    port: int | None
    tls: bool | None
    verify: bool | None
    sends: bool
    own_ca: bool


class TlsCheck(TypedDict):
    host: str | None
    port: int | None
    starttls: str | None
    own_ca: bool


class DnsCheck(TypedDict):
    query: str | None
    record: str | None
    resolver: str | None


class IcmpCheck(TypedDict):
    host: str | None
    packets: int | None


class ComponentView(TypedDict):
    key: str
    name: str
    type: str
    kind: str | None
    status: str
    status_since: str | None
    paused: bool
    interval_s: int | None
    last_checked_at: str | None
    check: HttpCheck | TcpCheck | TlsCheck | DnsCheck | IcmpCheck | None


class ComponentPage(TypedDict):
    components: list[ComponentView]
    next_cursor: str | None


def shown(row: Component) -> ComponentView:
    return {
        "key": row.key,
        "name": row.name,
        "type": row.type,
        "kind": row.kind,
        "status": row.status,
        "status_since": _iso(row.status_since),
        "paused": row.paused,
        "interval_s": row.interval_seconds,
        "last_checked_at": _iso(row.last_checked_at),
        "check": check(row) if row.type == "ENDPOINT" else None,
    }


def check(row: Component) -> HttpCheck | TcpCheck | TlsCheck | DnsCheck | IcmpCheck | None:
    """The public fields of a component's check, by its kind (None for a kind it does not know)."""
    fields = row.target or {}
    own_ca = bool(fields.get("ca"))
    if row.kind == "http":
        return {
            "url": public_url(row.url or ""),
            "method": row.method,
            "header_names": sorted(row.headers or {}),
            "forward_headers": row.forward_headers,
            "own_ca": own_ca,
        }
    host, port = fields.get("host"), fields.get("port")
    if row.kind == "tcp":
        tls, verify, sends = fields.get("tls"), fields.get("verify"), fields.get("send") is not None
        return {"host": host, "port": port, "tls": tls, "verify": verify, "sends": sends, "own_ca": own_ca}
    if row.kind == "tls":
        return {"host": host, "port": port, "starttls": fields.get("starttls"), "own_ca": own_ca}
    if row.kind == "dns":
        return {"query": fields.get("query"), "record": fields.get("record"), "resolver": fields.get("resolver")}
    if row.kind == "icmp":
        return {"host": host, "packets": fields.get("packets")}
    return None


def public_url(url: str) -> str:
    """``url`` without its user, password, query and fragment, which may hold credentials."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{f':{port}' if port else ''}{parts.path}"


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


EXAMPLE: ComponentView = {
    "key": "api",
    "name": "Public API",
    "type": "ENDPOINT",
    "kind": "http",
    "status": "OPERATIONAL",
    "status_since": "2026-12-07T14:30:00+00:00",
    "paused": False,
    "interval_s": 30,
    "last_checked_at": "2026-12-07T14:41:30+00:00",
    "check": {
        "url": "https://api.acme.example/health",
        "method": "GET",
        "header_names": ["Authorization"],
        "forward_headers": False,
        "own_ca": False,
    },
}


def named(call: Call) -> Component:
    """The component the path's ``key`` names in the token's organization, all its columns; else 404."""
    return COMPONENTS.named(call.organization_id, call.params["key"], Component.select())


def _write(organization_id: int, spec: uptime.ComponentSpec, current: Component | None) -> int:
    policy = None
    if spec.escalation_policy is not None:
        policy = EscalationPolicy.get_or_none(
            EscalationPolicy.organization == organization_id, EscalationPolicy.key == spec.escalation_policy
        )
        if policy is None:
            problem = f"$.escalation_policy: this organization has no escalation policy {spec.escalation_policy!r}"
            raise invalid("component", [problem])
    try:
        uptime.upsert(organization_id, spec, current, None if policy is None else policy.id, owner=OWNER)
    except peewee.IntegrityError as e:
        if "heartbeat_monitor" in str(e):
            raise invalid("component", ["$.token: another heartbeat has this token"]) from None
        raise
    return Component.get(Component.organization == organization_id, Component.key == spec.key).id


COMPONENTS = Resource(
    name="component",
    plural="components",
    model=Component,
    identifier="key",
    spec=uptime.ComponentSpec,
    view=ComponentView,
    page=ComponentPage,
    show=lambda rows: [shown(row) for row in rows],
    document=uptime.document,
    write=_write,
    existing=lambda organization_id, spec: Component.get_or_none(
        Component.organization == organization_id, Component.key == spec.key
    ),
    listed=lambda: Component.select(*SHOWN),
    filters=(
        Filter("status", "Only the components in this status.", allowed=STATUSES, column=Component.status),
        Filter("type", "Only the components of this type.", allowed=TYPES, column=Component.type),
        Filter("kind", "Only the endpoints checked by this kind.", allowed=KINDS, column=Component.kind),
    ),
    secrets=("token", "url", "headers", "body", "send"),
    refused={"ca_file": "a file is read where `pulse apply` runs, not over the API: give ca, the PEM text"},
    example=EXAMPLE,
    body_example={
        "key": "api",
        "name": "Public API",
        "url": "https://api.acme.example/health",
        "interval": "30s",
        "headers": {"Authorization": "Bearer s3cr3t"},
    },
    patch_example={"interval": "1m", "headers": {"Authorization": None}},
)
