"""``GET /api/v1/components`` and ``GET /api/v1/components/{key}``: the token's organization's
components (scope ``read``), listed by key a page at a time (`pulse.api.pages`), filtered by
``status``, ``type`` and ``kind``.

A component is shown with its check's public fields (``check``, for an ENDPOINT) and nothing that
may hold a secret: a header's name but never its value, no body, no tcp payload, no CA's PEM (only
whether it has one of its own), and a URL without its user, password, query or fragment.
"""

from __future__ import annotations

import re
from datetime import datetime
from urllib.parse import urlsplit

from typing_extensions import TypedDict

from pulse.api import pages, params
from pulse.api.auth import Answer, Call, error
from pulse.api.declared import Operation
from pulse.api.writes import etag
from pulse.components.status import DEGRADED, MAINTENANCE, MAJOR_OUTAGE, OPERATIONAL, PARTIAL_OUTAGE
from pulse.models import Component
from pulse.spec import SLUG

STATUSES = (OPERATIONAL, DEGRADED, PARTIAL_OUTAGE, MAJOR_OUTAGE, MAINTENANCE)
TYPES = ("ENDPOINT", "METRIC", "SERVICE", "HEARTBEAT")
KINDS = ("http", "tcp", "dns", "icmp", "tls")  # pulse.uptime.kinds.KINDS, without loading each kind
FILTERS = (
    params.OneOf("status", "Only the components in this status.", allowed=STATUSES),
    params.OneOf("type", "Only the components of this type.", allowed=TYPES),
    params.OneOf("kind", "Only the endpoints checked by this kind.", allowed=KINDS),
)
#: What `shown` reads of a row: a listing loads these alone (not a component's conditions, body or
#: thresholds, whose JSON would be decoded for nothing: half a page's CPU).
SHOWN = (
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


def index(call: Call) -> ComponentPage:
    limit = pages.limit(call.query)
    query = Component.select(*SHOWN).where(Component.organization == call.organization_id)
    for kind in FILTERS:
        value = kind.read(call.query)
        if value is not None:
            query = query.where(getattr(Component, kind.name) == value)
    after = pages.after(call.query)
    if after is not None:
        query = query.where(Component.key > after)
    rows, next_cursor = pages.take(query, Component.key, limit, "key")
    return {"components": [shown(r) for r in rows], "next_cursor": next_cursor}


def one(call: Call) -> Answer:
    row = named(call)
    return Answer(shown(row), headers={"ETag": etag(row.id, row.version)})


def named(call: Call) -> Component:
    """The component the path's ``key`` names in the token's organization; else 404."""
    key = call.params["key"]
    row = None
    if re.fullmatch(SLUG, key):  # a key that cannot be one (a NUL, which PostgreSQL refuses) is not looked up
        row = Component.get_or_none(Component.organization == call.organization_id, Component.key == key)
    if row is None:
        raise error(404, f"no component {key[:100]!r}")
    return row


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
INDEX = Operation(
    "List the components, by key",
    ComponentPage,
    query=(*pages.QUERY, *FILTERS),
    refusals=(400,),
    example={"components": [EXAMPLE], "next_cursor": "YXBp"},
)
ONE = Operation("A component, with its ETag", ComponentView, refusals=(404,), answer_headers=("ETag",), example=EXAMPLE)
