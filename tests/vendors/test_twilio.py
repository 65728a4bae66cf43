"""The fake Twilio answers like Twilio's Messages API: the message resource, its segments, refusals, rate limit."""

from __future__ import annotations

import re
from typing import Any

import pytest
import requests
from py_vapid import Vapid

from tests.support.vendors import Vendors
from tests.vendors import sender


def test_twilio_accepts_a_message(unlimited: Vendors, vapid: Vapid) -> None:
    response = sender(unlimited, "twilio", vapid)(timeout=5)
    assert response.status_code == 201
    message = response.json()
    assert re.fullmatch(r"SM[0-9a-f]{32}", message["sid"])
    assert message["account_sid"] == unlimited.twilio_sid
    assert (message["to"], message["from"], message["body"]) == ("+15558675310", unlimited.twilio_from, "API is down")
    assert (message["status"], message["num_segments"], message["direction"]) == ("queued", "1", "outbound-api")
    assert message["price"] is message["error_code"] is message["error_message"] is None
    assert message["uri"] == f"/2010-04-01/Accounts/{unlimited.twilio_sid}/Messages/{message['sid']}.json"
    [received] = unlimited.received("twilio")
    assert received.form == {"To": "+15558675310", "From": unlimited.twilio_from, "Body": "API is down"}
    assert received.destination == unlimited.twilio_sid


@pytest.mark.parametrize(("body", "segments"), [("x" * 161, "2"), ("🔥" * 70, "3"), ("a" * 1600, "11")])
def test_twilio_counts_segments(unlimited: Vendors, body: str, segments: str) -> None:
    url = f"{unlimited.twilio_url()}/2010-04-01/Accounts/{unlimited.twilio_sid}/Messages.json"
    form = {"To": "+15558675310", "From": unlimited.twilio_from, "Body": body}
    response = requests.post(url, data=form, auth=(unlimited.twilio_sid, unlimited.twilio_token), timeout=5)
    assert response.json()["num_segments"] == segments


@pytest.mark.parametrize(
    ("change", "status", "code"),
    [
        ({"auth": ("AC" + "0" * 32, "wrong")}, 401, 20003),
        ({"form": {"From": "+15005550006", "Body": "x"}}, 400, 21604),
        ({"form": {"To": "+15558675310", "Body": "x"}}, 400, 21603),
        ({"form": {"To": "555-867-5310", "From": "+15005550006", "Body": "x"}}, 400, 21211),
        ({"form": {"To": "+15558675310", "From": "+15005550006", "Body": "x" * 1601}}, 400, 21617),
        ({"form": {"To": "+15558675310", "From": "+15005550006"}}, 400, 21602),
        ({"json": True}, 400, 21604),
    ],
)
def test_twilio_refuses(unlimited: Vendors, change: dict[str, Any], status: int, code: int) -> None:
    url = f"{unlimited.twilio_url()}/2010-04-01/Accounts/{unlimited.twilio_sid}/Messages.json"
    form = change.get("form", {"To": "+15558675310", "From": unlimited.twilio_from, "Body": "x"})
    auth = change.get("auth", (unlimited.twilio_sid, unlimited.twilio_token))
    if change.get("json"):
        response = requests.post(url, json=form, auth=auth, timeout=5)
    else:
        response = requests.post(url, data=form, auth=auth, timeout=5)
    assert response.status_code == status
    error = response.json()
    assert (error["code"], error["status"]) == (code, status)
    assert error["more_info"] == f"https://www.twilio.com/docs/errors/{code}"
    assert error["message"]
    assert unlimited.received("twilio") == []


def test_twilio_rate_limit_answers_20429(vendors: Vendors, vapid: Vapid) -> None:
    vendors.limit("twilio", 0.5, 1)
    send = sender(vendors, "twilio", vapid)
    assert send(timeout=5).status_code == 201
    refused = send(timeout=5)
    assert refused.status_code == 429
    assert refused.json()["code"] == 20429
    assert "Retry-After" not in refused.headers  # Twilio documents none
