"""What the tests of the vendor fakes share: a valid request to each vendor (`sender`), push encryption and VAPID."""

from __future__ import annotations

import base64
import functools
import time
from collections.abc import Callable
from typing import Any

import http_ece
import requests
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import Vapid

from tests.support.vendors import Vendors

EMAIL: dict[str, Any] = {
    "from": "Pulse <alerts@pulse.example>",
    "to": ["ops@example.com"],
    "subject": "API is down",
    "html": "<p>API is down</p>",
    "text": "API is down",
}
CARD: dict[str, Any] = {
    "type": "message",
    "attachments": [
        {
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": None,
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.2",
                "body": [{"type": "TextBlock", "text": "API is down", "wrap": True}],
            },
        }
    ],
}

Send = Callable[..., requests.Response]


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encrypt(subscription: dict[str, Any], data: bytes) -> bytes:
    """An RFC 8291 aes128gcm body for the subscription."""
    keys = subscription["keys"]
    return http_ece.encrypt(
        data,
        private_key=ec.generate_private_key(ec.SECP256R1()),
        dh=unb64(keys["p256dh"]),
        auth_secret=unb64(keys["auth"]),
        version="aes128gcm",
    )


def push_headers(vendors: Vendors, vapid: Vapid, **claims: Any) -> dict[str, str]:
    """The headers of a valid push, with ``claims`` replacing the VAPID claims."""
    claims = {"sub": "mailto:ops@example.com", "aud": vendors.base_url, "exp": int(time.time()) + 3600, **claims}
    signer = Vapid(private_key=vapid.private_key, conf={"no-strict": True})  # py_vapid itself refuses a bad sub
    return {"TTL": "60", "Content-Encoding": "aes128gcm", **signer.sign(claims)}


def sender(vendors: Vendors, vendor: str, vapid: Vapid) -> Send:
    """A function sending a valid request to one (new) destination of ``vendor``; it takes requests' keywords."""
    if vendor == "resend":
        auth = {"Authorization": f"Bearer {vendors.resend_key}"}
        return functools.partial(requests.post, f"{vendors.resend_url()}/emails", json=EMAIL, headers=auth)
    if vendor == "twilio":
        url = f"{vendors.twilio_url()}/2010-04-01/Accounts/{vendors.twilio_sid}/Messages.json"
        form = {"To": "+15558675310", "From": vendors.twilio_from, "Body": "API is down"}
        return functools.partial(requests.post, url, data=form, auth=(vendors.twilio_sid, vendors.twilio_token))
    if vendor == "slack":
        return functools.partial(requests.post, vendors.slack_hook(), json={"text": "API is down"})
    if vendor == "discord":
        return functools.partial(requests.post, vendors.discord_hook(), json={"content": "API is down"})
    if vendor == "teams":
        return functools.partial(requests.post, vendors.teams_workflow(), json=CARD)
    if vendor == "webhook":
        return functools.partial(requests.post, vendors.webhook_receiver(), json={"event": "down"})
    subscription = vendors.push_subscription()

    def push(**kwargs: Any) -> requests.Response:
        body = encrypt(subscription, b"API is down")
        return requests.post(subscription["endpoint"], data=body, headers=push_headers(vendors, vapid), **kwargs)

    return push
