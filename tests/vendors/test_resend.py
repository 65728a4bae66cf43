"""The fake Resend answers like Resend's API: emails accepted, refused, sent once per idempotency key, rate-limited."""

from __future__ import annotations

import functools
import uuid
from typing import Any

import pytest
import requests
from py_vapid import Vapid

from tests.support.vendors import Vendors
from tests.vendors import EMAIL, sender


def test_resend_accepts_an_email(unlimited: Vendors) -> None:
    auth = {"Authorization": f"Bearer {unlimited.resend_key}"}
    response = requests.post(f"{unlimited.resend_url()}/emails", json=EMAIL, headers=auth, timeout=5)
    assert response.status_code == 200
    email_id = response.json()["id"]
    assert uuid.UUID(email_id)
    [received] = unlimited.received("resend")
    assert (received.method, received.path, received.destination) == ("POST", "/resend/emails", "team")
    assert received.json == EMAIL
    assert received.headers["authorization"] == auth["Authorization"]


def test_resend_idempotency_key_sends_once(unlimited: Vendors) -> None:
    post = functools.partial(
        requests.post,
        f"{unlimited.resend_url()}/emails",
        headers={"Authorization": f"Bearer {unlimited.resend_key}", "Idempotency-Key": "incident-7/notify"},
        timeout=5,
    )
    first, again = post(json=EMAIL), post(json=EMAIL)
    assert first.status_code == again.status_code == 200
    assert first.json()["id"] == again.json()["id"]
    other = post(json={**EMAIL, "subject": "API is up"})
    assert other.status_code == 409
    assert other.json()["name"] == "invalid_idempotent_request"
    assert len(unlimited.received("resend")) == 1
    assert len(unlimited.attempts("resend")) == 3


AUTH = {"Authorization": f"Bearer {Vendors.resend_key}"}


@pytest.mark.parametrize(
    ("headers", "body", "status", "name"),
    [
        ({}, EMAIL, 401, "missing_api_key"),
        ({"Authorization": "Bearer re_wrong"}, EMAIL, 403, "invalid_api_key"),
        (AUTH, {k: v for k, v in EMAIL.items() if k != "subject"}, 422, "missing_required_field"),
        (AUTH, {**EMAIL, "to": [f"ops{i}@example.com" for i in range(51)]}, 422, "validation_error"),
        (AUTH, {**EMAIL, "to": "not an address"}, 422, "validation_error"),
        (AUTH, {k: v for k, v in EMAIL.items() if k not in ("html", "text")}, 422, "missing_required_field"),
        ({**AUTH, "Idempotency-Key": "k" * 257}, EMAIL, 400, "invalid_idempotency_key"),
    ],
)
def test_resend_refuses(
    unlimited: Vendors, headers: dict[str, str], body: dict[str, Any], status: int, name: str
) -> None:
    response = requests.post(f"{unlimited.resend_url()}/emails", json=body, headers=headers, timeout=5)
    assert response.status_code == status
    error = response.json()
    assert (error["statusCode"], error["name"]) == (status, name)
    assert error["message"]
    assert unlimited.received("resend") == []
    assert len(unlimited.attempts("resend")) == 1


def test_resend_rate_limit_is_two_a_second_per_team(vendors: Vendors, vapid: Vapid) -> None:
    send = sender(vendors, "resend", vapid)
    answers = [send(timeout=5) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert answers[0].headers["ratelimit-limit"] == "2"
    assert answers[1].headers["ratelimit-remaining"] == "0"
    refused = answers[2]
    assert refused.json()["name"] == "rate_limit_exceeded"
    assert int(refused.headers["retry-after"]) >= 1
    assert int(refused.headers["ratelimit-reset"]) >= 1
    assert len(vendors.received("resend")) == 2
