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
from typing import Any
from urllib.parse import urlsplit

from pulse.api import pages
from pulse.api.auth import Answer, Call, error
from pulse.api.writes import etag
from pulse.components.status import DEGRADED, MAINTENANCE, MAJOR_OUTAGE, OPERATIONAL, PARTIAL_OUTAGE
from pulse.models import Component
from pulse.spec import SLUG

STATUSES = (OPERATIONAL, DEGRADED, PARTIAL_OUTAGE, MAJOR_OUTAGE, MAINTENANCE)
TYPES = ("ENDPOINT", "METRIC", "SERVICE", "HEARTBEAT")
KINDS = ("http", "tcp", "dns", "icmp", "tls")  # pulse.uptime.kinds.KINDS, without loading each kind
FILTERS = {"status": STATUSES, "type": TYPES, "kind": KINDS}
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


def index(call: Call) -> dict[str, Any]:
    limit = pages.limit(call.query)
    query = Component.select(*SHOWN).where(Component.organization == call.organization_id)
    for name, allowed in FILTERS.items():
        value = call.query.get(name)
        if value is None:
            continue
        if value not in allowed:
            raise error(400, f"{name} must be one of {', '.join(allowed)}")
        query = query.where(getattr(Component, name) == value)
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


def shown(row: Component) -> dict[str, Any]:
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


def check(row: Component) -> dict[str, Any]:
    """The public fields of a component's check, by its kind."""
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
    if row.kind == "tcp":
        keys = ("host", "port", "tls", "verify")
        return {**{k: fields.get(k) for k in keys}, "sends": fields.get("send") is not None, "own_ca": own_ca}
    if row.kind == "tls":
        return {**{k: fields.get(k) for k in ("host", "port", "starttls")}, "own_ca": own_ca}
    if row.kind == "dns":
        return {k: fields.get(k) for k in ("query", "record", "resolver")}
    if row.kind == "icmp":
        return {k: fields.get(k) for k in ("host", "packets")}
    return {}


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
