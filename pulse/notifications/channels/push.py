"""Web Push: the JSON the service worker shows as a notification, encrypted and VAPID-signed.

The standards: RFC 8030 (Generic Event Delivery Using HTTP Push), RFC 8291 (Message Encryption
for Web Push, aes128gcm) and RFC 8292 (VAPID); pywebpush does the encryption.

The payload must fit one encrypted record (3,993 bytes of plaintext), so `json.dumps` of it stays
within `MAX_BYTES` whatever the input; the body gets whatever room the rest leaves.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from typing import Any
from urllib.parse import urlsplit

from py_vapid import Vapid

from pulse.config import Settings
from pulse.net import AddressPolicy
from pulse.notifications.channels.notice import CRITICAL, INFO, RESOLVED, WARNING, Notice
from pulse.notifications.channels.text import fit, headline, iso, json_length, link, shorten, status_name, when
from pulse.notifications.channels.transport import Channel, Destination, Sent, TransportError, json_field, post

MAX_BYTES = 3000
TITLE_MAX = 120  # characters, then at most TITLE_BYTES in JSON
TITLE_BYTES = 600
BODY_MAX = 500  # characters: a notification shows a few lines
URL_BYTES = 1000  # a longer link is left out
TAG_BYTES = 100  # a longer tag becomes "pulse-<hash>"


def tag(notice: Notice) -> str:
    """The notification tag: a newer notice about the same thing replaces the older one on screen."""
    name = notice.component or notice.organization
    value = f"pulse-{notice.kind}-{name}"
    if json_length(value) <= TAG_BYTES:
        return value
    return "pulse-" + hashlib.sha256(f"{notice.kind}-{name}".encode()).hexdigest()[:32]


def payload(notice: Notice) -> dict[str, Any]:
    """The notification data, before encryption."""
    url = link(notice)
    if url and json_length(url) > URL_BYTES:
        url = None
    state = status_name(notice.status) if notice.status else None
    lead = f"{state} since {when(notice.since)}." if state else f"Since {when(notice.since)}."
    data = {
        "title": fit(shorten(headline(notice), TITLE_MAX), TITLE_BYTES, measure=json_length),
        "body": lead,
        "url": url,
        "tag": tag(notice),
        "severity": notice.severity,
        "timestamp": iso(notice.since),
    }
    summary = shorten(" ".join(notice.summary.split()), BODY_MAX - len(lead) - 1)
    summary = fit(summary, MAX_BYTES - len(json.dumps(data)) - 1, measure=json_length)  # 1 for the space
    if summary:
        data["body"] = f"{lead} {summary}"
    return data


# --- sending -----------------------------------------------------------------------------------

TTL_S = 24 * 3600  # a phone that is off for a day still gets the news
VAPID_LIFETIME_S = 12 * 3600
URGENCY = {CRITICAL: "high", WARNING: "normal", RESOLVED: "normal", INFO: "low"}


def deliver(notice: Notice, destination: Destination, settings: Settings, policy: AddressPolicy) -> Sent:
    """Encrypt (aes128gcm) for the subscription, sign a VAPID token for the push service's origin,
    POST; a 404 or 410 means the subscription is gone."""
    if not (settings.vapid_private_key and settings.vapid_subject):
        raise TransportError(
            "Web Push is not configured: set PULSE_VAPID_PRIVATE_KEY and PULSE_VAPID_SUBJECT", permanent=True
        )
    # Imported here: pywebpush brings aiohttp and requests, a third of every worker's start-up
    # (and of `pulse apply`'s), for a channel few organizations have.
    from pywebpush import WebPusher, WebPushException

    endpoint = destination.settings["endpoint"]
    try:
        pusher = WebPusher({"endpoint": endpoint, "keys": dict(destination.settings["keys"])})
        body = pusher.encode(json.dumps(payload(notice)).encode(), "aes128gcm")["body"]
    except (WebPushException, ValueError, TypeError) as e:
        raise TransportError(
            f"Web Push: the subscription's keys are not usable ({type(e).__name__})", permanent=True
        ) from None
    origin = urlsplit(endpoint)
    claims = {
        "sub": settings.vapid_subject,
        "aud": f"{origin.scheme}://{origin.netloc}",
        "exp": int(time.time()) + VAPID_LIFETIME_S,
    }
    headers = {
        **_vapid(settings.vapid_private_key).sign(claims),
        "TTL": str(TTL_S),
        "Urgency": URGENCY.get(notice.severity, "normal"),
        "Content-Encoding": "aes128gcm",
        "Content-Type": "application/octet-stream",
    }
    return post(
        endpoint,
        body,
        headers,
        policy,
        vendor="Web Push",
        timeout_s=settings.notify_timeout_s,
        reason=json_field("message", "error"),
        reference=lambda response: response.headers.get("location"),
    )


@functools.cache
def _vapid(private_key: str) -> Vapid:
    """The signing key, parsed once per process: PEM, or base64url DER or raw."""
    try:
        if "-----BEGIN" in private_key:
            return Vapid.from_pem(private_key.encode())
        return Vapid.from_string(private_key)
    except Exception:  # noqa: BLE001 - py_vapid raises many types; the text must not echo the key
        raise TransportError("PULSE_VAPID_PRIVATE_KEY is not a valid VAPID private key", permanent=True) from None


CHANNEL = Channel(
    kind="push", label="Web Push", deliver=deliver, fields=("endpoint", "keys"), subscriber="push", address="endpoint"
)
