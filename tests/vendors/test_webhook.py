"""The fake webhook receiver: any JSON, and Pulse's X-Pulse-Signature checked when it has a secret."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid

import requests

from tests.support.vendors import Vendors


def signed(secret: str, body: bytes, stamp: int | None = None) -> dict[str, str]:
    """Pulse's webhook signature headers."""
    when = str(int(time.time()) if stamp is None else stamp)
    signature = hmac.new(secret.encode(), f"{when}.".encode() + body, hashlib.sha256).hexdigest()
    return {
        "Content-Type": "application/json",
        "X-Pulse-Delivery": str(uuid.uuid4()),
        "X-Pulse-Timestamp": when,
        "X-Pulse-Signature": f"v1={signature}",
    }


def test_webhook_receiver_without_secret_takes_any_json(unlimited: Vendors) -> None:
    response = requests.post(unlimited.webhook_receiver(), json={"event": "down"}, timeout=5)
    assert (response.status_code, response.json()) == (200, {"ok": True})
    [received] = unlimited.received("webhook")
    assert received.json == {"event": "down"}
    assert received.destination and received.path == f"/webhook/{received.destination}"


def test_webhook_receiver_checks_the_signature(unlimited: Vendors) -> None:
    url, body = unlimited.webhook_receiver(secret="s3cret"), json.dumps({"event": "down"}).encode()
    good = requests.post(url, data=body, headers=signed("s3cret", body), timeout=5)
    assert (good.status_code, good.json()) == (200, {"ok": True})
    rotated = signed("s3cret", body)
    rotated["X-Pulse-Signature"] = "v1=" + "0" * 64 + ", " + rotated["X-Pulse-Signature"]
    assert requests.post(url, data=body, headers=rotated, timeout=5).status_code == 200
    bad = [
        {"Content-Type": "application/json"},
        signed("other", body),
        signed("s3cret", body, stamp=int(time.time()) - 301),
        {**signed("s3cret", body), "X-Pulse-Delivery": ""},
        signed("s3cret", body + b" "),
    ]
    for headers in bad:
        refused = requests.post(url, data=body, headers=headers, timeout=5)
        assert refused.status_code == 401, headers
        assert refused.json()["ok"] is False
    assert len(unlimited.received("webhook")) == 2
    assert len(unlimited.attempts("webhook")) == 7


def test_webhook_receiver_wants_json(unlimited: Vendors) -> None:
    response = requests.post(unlimited.webhook_receiver(), data=b"down", timeout=5)
    assert response.status_code == 400
