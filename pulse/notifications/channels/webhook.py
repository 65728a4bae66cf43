"""Generic webhooks: a stable JSON event, signed with the endpoint's secret.

The body (schema version 1; fields are only ever added)::

    {
      "id": "d9b2…",                        # this delivery's id, the same on every retry
      "type": "component.status_changed",   # or incident.opened, incident.resolved, test
      "event_id": 42,
      "occurred_at": "2026-12-01T14:03:27+00:00",   # ISO 8601, UTC
      "severity": "critical",               # critical, warning, resolved or info
      "title": "Public API: major outage",  # plain text, at most 1,000 characters
      "summary": "…",                       # plain text, at most 10,000 characters
      "url": "https://status.acme.com/",    # or null (also when longer than 2,000 characters)
      "organization": {"name": "Acme"},     # names and statuses: at most 1,000 characters
      "component": {"name": "Public API", "status": "MAJOR_OUTAGE", "previous_status": "OPERATIONAL"}
    }

``component`` is null when the event is about no component; ``status`` and ``previous_status``
may be null. Cut texts end with "…".

Headers: ``Content-Type: application/json``, ``X-Pulse-Delivery`` (the id), ``X-Pulse-Event``
(the type), ``X-Pulse-Timestamp`` (Unix seconds) and, when the endpoint has a secret,
``X-Pulse-Signature: v1=<hex HMAC-SHA256 of "<timestamp>." + body, keyed with the secret>``.
Receivers should recompute it over the raw body, compare in constant time and reject old timestamps.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

from pulse.config import Settings
from pulse.net import AddressPolicy
from pulse.notifications.channels.notice import Notice
from pulse.notifications.channels.text import iso, link, shorten
from pulse.notifications.channels.transport import Channel, Destination, Sent, post

TITLE_MAX = 1000
SUMMARY_MAX = 10_000
NAME_MAX = 1000


def payload(notice: Notice, delivery_id: str) -> dict[str, Any]:
    """The JSON body of one delivery (see the module docstring)."""
    component = None
    if notice.component is not None:
        component = {
            "name": shorten(notice.component, NAME_MAX),
            "status": notice.status and shorten(notice.status, NAME_MAX),
            "previous_status": notice.previous_status and shorten(notice.previous_status, NAME_MAX),
        }
    return {
        "id": delivery_id,
        "type": notice.kind,
        "event_id": notice.event_id,
        "occurred_at": iso(notice.since),
        "severity": notice.severity,
        "title": shorten(notice.title, TITLE_MAX),
        "summary": shorten(notice.summary, SUMMARY_MAX),
        "url": link(notice),
        "organization": {"name": shorten(notice.organization, NAME_MAX)},
        "component": component,
    }


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value: "v1=" and the hex HMAC-SHA256 of "<timestamp>." + body."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"v1={digest}"


def headers(delivery_id: str, kind: str, timestamp: int, body: bytes, secret: str | None) -> dict[str, str]:
    """The request headers; signed only when ``secret`` is set (an empty secret counts as none)."""
    result = {
        "Content-Type": "application/json",
        "X-Pulse-Delivery": delivery_id,
        "X-Pulse-Event": kind,
        "X-Pulse-Timestamp": str(timestamp),
    }
    if secret:
        result["X-Pulse-Signature"] = sign(secret, timestamp, body)
    return result


# --- sending -----------------------------------------------------------------------------------


def deliver(notice: Notice, destination: Destination, settings: Settings, policy: AddressPolicy) -> Sent:
    """POST the JSON document, signed when the destination has a secret; any 2xx is delivered."""
    body = json.dumps(payload(notice, destination.delivery_id)).encode()
    signed = headers(destination.delivery_id, notice.kind, int(time.time()), body, destination.settings.get("secret"))
    url = destination.settings["url"]
    return post(url, body, signed, policy, vendor="Webhook", timeout_s=settings.notify_timeout_s)


CHANNEL = Channel(
    kind="webhook",
    label="Webhook",
    deliver=deliver,
    fields=("url", "secret"),
    optional=("secret",),
    subscriber="webhook",
    deduplicated=True,  # X-Pulse-Delivery
)
