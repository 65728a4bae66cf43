"""Grafana's webhook signature, checked when a grafana source has a signing secret (``signature``
in its spec, `pulse.sources.spec`).

Grafana Alerting's webhook contact point signs its requests when its *HMAC signature* settings
are set ("Configure webhook notifications" in Grafana's documentation, from Grafana 12; its
``hmacConfig``): the header (``X-Grafana-Alerting-Signature`` unless configured otherwise) holds
the lowercase hex of HMAC-SHA256, keyed with the secret, over the raw body; when a timestamp
header is configured, Grafana sends the Unix time in seconds in it and signs ``<timestamp>:``
followed by the body.

`problem` checks the body's bytes as they arrived, before they are parsed, and compares in
constant time. Grafana sets no window for the timestamp; Pulse takes one of `WINDOW` either side
of its clock. Within it a captured request can be sent again: it records the same event again,
which pages no one twice (`pulse.sources.apply`). The secret is never logged nor in a reason.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

HEADER = "X-Grafana-Alerting-Signature"  # Grafana's default
WINDOW = timedelta(minutes=5)


def sign(secret: str, body: bytes, timestamp: str | None = None) -> str:
    """Grafana's signature of ``body``, sent at ``timestamp`` (Unix seconds) when it sends one."""
    signed = (f"{timestamp}:".encode() if timestamp is not None else b"") + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def problem(settings: Mapping[str, Any], headers: Mapping[str, str], body: bytes, now: datetime) -> str | None:
    """Why the request is not signed as the source's ``settings`` (``secret``, ``header``,
    ``timestamp_header``) say, in a few words; None when it is."""
    header, timestamp_header = settings["header"], settings.get("timestamp_header")
    given = headers.get(header, "")
    if not given:
        return f"no {header} header"
    timestamp = None
    if timestamp_header:
        timestamp = headers.get(timestamp_header, "")
        if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
            return f"no {timestamp_header} header of Unix seconds"
        if abs(now.timestamp() - int(timestamp)) > WINDOW.total_seconds():
            return f"a {timestamp_header} over {WINDOW.seconds // 60} minutes from now"
    expected = sign(settings["secret"], body, timestamp).encode()
    if not hmac.compare_digest(expected, given.strip().lower().encode("latin-1", "replace")):
        return f"no valid {header}"
    return None
