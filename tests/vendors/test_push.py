"""The fake Web Push service: it decrypts what pywebpush sends, checks VAPID, refuses like autopush, rate-limits."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from py_vapid import Vapid
from pywebpush import WebPushException, webpush

from tests.support.vendors import Vendors
from tests.vendors import encrypt, push_headers, sender, unb64


def test_push_delivers_what_pywebpush_encrypted(unlimited: Vendors, vapid: Vapid) -> None:
    subscription = unlimited.push_subscription()
    assert len(unb64(subscription["keys"]["p256dh"])) == 65
    assert len(unb64(subscription["keys"]["auth"])) == 16
    data = json.dumps({"title": "API is down", "url": "https://status.example/incidents/7"})
    response = webpush(
        subscription, data, vapid_private_key=vapid, vapid_claims={"sub": "mailto:ops@example.com"}, ttl=60, timeout=5
    )
    assert response.status_code == 201
    assert response.headers["Location"].startswith(unlimited.base_url)
    [received] = unlimited.received("push")
    assert received.plaintext == data.encode()
    assert received.headers["ttl"] == "60"
    assert received.destination == subscription["endpoint"].rsplit("/", 1)[1]


@pytest.mark.parametrize("status", [410, 404])
def test_push_unsubscribed_is_gone(unlimited: Vendors, vapid: Vapid, status: int) -> None:
    subscription = unlimited.push_subscription()
    unlimited.unsubscribe(subscription, status=status)
    with pytest.raises(WebPushException) as raised:
        webpush(subscription, "x", vapid_private_key=vapid, vapid_claims={"sub": "mailto:ops@example.com"}, timeout=5)
    assert raised.value.response is not None
    assert raised.value.response.status_code == status
    assert raised.value.response.json()["code"] == status
    assert unlimited.received("push") == []


def test_push_refuses_an_exp_over_a_day_ahead(unlimited: Vendors, vapid: Vapid) -> None:
    claims = {"sub": "mailto:ops@example.com", "exp": int(time.time()) + 25 * 3600}
    with pytest.raises(WebPushException) as raised:
        webpush(unlimited.push_subscription(), "x", vapid_private_key=vapid, vapid_claims=claims, timeout=5)
    assert raised.value.response is not None
    assert raised.value.response.status_code == 401
    assert raised.value.response.json()["errno"] == 109


def test_push_accepts_a_space_after_the_comma_and_no_body(unlimited: Vendors, vapid: Vapid) -> None:
    subscription = unlimited.push_subscription()
    headers = push_headers(unlimited, vapid)
    headers["Authorization"] = headers["Authorization"].replace(",k=", ", k=")
    sent = requests.post(subscription["endpoint"], data=encrypt(subscription, b"hi"), headers=headers, timeout=5)
    assert sent.status_code == 201
    empty = requests.post(subscription["endpoint"], headers={**headers, "Content-Encoding": ""}, timeout=5)
    assert empty.status_code == 201
    assert [r.plaintext for r in unlimited.received("push")] == [b"hi", b""]


def corrupt(body: bytes) -> bytes:
    return body[:-1] + bytes([body[-1] ^ 1])


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"drop": "TTL"}, 400),
        ({"headers": {"TTL": "soon"}}, 400),
        ({"headers": {"Urgency": "urgent"}}, 400),
        ({"headers": {"Content-Encoding": "aesgcm"}}, 415),
        ({"drop": "Authorization"}, 401),
        ({"claims": {"aud": "https://push.example.com"}}, 401),
        ({"claims": {"exp": int(time.time()) + 25 * 3600}}, 401),
        ({"claims": {"exp": int(time.time()) - 60}}, 401),
        ({"claims": {"sub": "ops@example.com"}}, 401),
        ({"data": b"x" * 4000}, 413),
        ({"body": corrupt}, 400),
    ],
)
def test_push_refuses(unlimited: Vendors, vapid: Vapid, change: dict[str, Any], status: int) -> None:
    subscription = unlimited.push_subscription()
    headers = {**push_headers(unlimited, vapid, **change.get("claims", {})), **change.get("headers", {})}
    headers.pop(change.get("drop", ""), None)
    body = encrypt(subscription, change.get("data", b"API is down"))
    body = change.get("body", lambda b: b)(body)
    response = requests.post(subscription["endpoint"], data=body, headers=headers, timeout=5)
    assert response.status_code == status
    error = response.json()
    assert error["code"] == status and error["errno"] and error["message"]
    assert unlimited.received("push") == []


def test_push_checks_the_application_server_key(unlimited: Vendors, vapid: Vapid) -> None:
    other = Vapid()
    other.generate_keys()
    public = other.public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    subscription = unlimited.push_subscription(application_server_key=base64.urlsafe_b64encode(public).decode())
    headers, body = push_headers(unlimited, vapid), encrypt(subscription, b"x")
    assert requests.post(subscription["endpoint"], data=body, headers=headers, timeout=5).status_code == 403
    headers = push_headers(unlimited, other)
    assert requests.post(subscription["endpoint"], data=body, headers=headers, timeout=5).status_code == 201


def test_push_rate_limit_answers_429(vendors: Vendors, vapid: Vapid) -> None:
    vendors.limit("push", 0.5, 1)
    send = sender(vendors, "push", vapid)
    assert send(timeout=5).status_code == 201
    refused = send(timeout=5)
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "2"
