"""What all fakes share: scripted failures in each vendor's format, hangs, prompt close, `wait_received`, bad names."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import requests
from py_vapid import Vapid

from tests.support.vendors import VENDORS, Fail, Forge, Hang, Vendors
from tests.support.wait import wait_for
from tests.vendors import sender

HTTP_VENDORS = [vendor for vendor in VENDORS if vendor != "smtp"]


@pytest.mark.parametrize(
    ("vendor", "status", "expect"),
    [
        ("resend", 500, {"statusCode": 500, "name": "internal_server_error"}),
        ("twilio", 503, {"code": 20503, "status": 503}),
        ("slack", 500, "rollup_error"),
        ("discord", 502, {"code": 0}),
        ("teams", 502, {"error": {"code": "BadGateway"}}),
        ("webhook", 500, {"ok": False}),
        ("push", 503, {"code": 503, "errno": 999, "error": "Service Unavailable"}),
    ],
)
def test_scripted_fail_answers_in_the_vendors_format(
    unlimited: Vendors, vapid: Vapid, vendor: str, status: int, expect: Any
) -> None:
    send = sender(unlimited, vendor, vapid)
    unlimited.script(vendor, Fail(status))
    failed = send(timeout=5)
    assert failed.status_code == status
    if isinstance(expect, str):
        assert failed.text == expect
    else:
        body = failed.json()
        for key, value in expect.items():
            assert body[key] == value or (isinstance(value, dict) and value.items() <= body[key].items())
    assert send(timeout=5).status_code < 300  # the script is used up
    assert len(unlimited.attempts(vendor)) == 2
    assert len(unlimited.received(vendor)) == 1


def test_scripted_discord_429_carries_retry_after(unlimited: Vendors, vapid: Vapid) -> None:
    send = sender(unlimited, "discord", vapid)
    unlimited.script("discord", Fail(429, retry_after=2.5), Fail(503, body=b"upstream", headers={"X-Test": "1"}))
    limited, failed = send(timeout=5), send(timeout=5)
    assert limited.status_code == 429
    assert limited.json() == {"message": "You are being rate limited.", "retry_after": 2.5, "global": False}
    assert limited.headers["Retry-After"] == "2.5"
    assert (failed.status_code, failed.content, failed.headers["X-Test"]) == (503, b"upstream", "1")


def test_a_forged_answer_is_made_from_the_request_and_is_no_delivery(unlimited: Vendors, vapid: Vapid) -> None:
    send = sender(unlimited, "resend", vapid)
    unlimited.script("resend", Forge(lambda headers: (200, {"said": headers["authorization"]}, {"X-Test": "1"})))
    forged = send(timeout=5)
    assert (forged.status_code, forged.json(), forged.headers["X-Test"]) == (
        200,
        {"said": f"Bearer {unlimited.resend_key}"},
        "1",
    )
    assert (len(unlimited.attempts("resend")), unlimited.received("resend")) == (1, [])


@pytest.mark.parametrize("vendor", HTTP_VENDORS)
def test_scripted_hang_times_the_client_out(unlimited: Vendors, vapid: Vapid, vendor: str) -> None:
    send = sender(unlimited, vendor, vapid)
    unlimited.script(vendor, Hang())
    with pytest.raises(requests.ReadTimeout):
        send(timeout=0.2)
    assert send(timeout=5).status_code < 300
    assert len(unlimited.attempts(vendor)) == 2
    assert len(unlimited.received(vendor)) == 1


def test_close_is_prompt_during_a_hang(vapid: Vapid) -> None:
    outcome: list[BaseException | requests.Response] = []
    with Vendors() as vendors:
        send = sender(vendors, "slack", vapid)
        vendors.script("slack", Hang())

        def call() -> None:
            try:
                outcome.append(send(timeout=30))
            except requests.RequestException as error:
                outcome.append(error)

        client = threading.Thread(target=call)
        client.start()
        wait_for(lambda: vendors.attempts("slack"), "the hung request", timeout=5, every=0.01)
        started = time.monotonic()
    assert time.monotonic() - started < 1
    client.join(timeout=2)
    assert not client.is_alive()
    assert isinstance(outcome[0], requests.ConnectionError)


def test_wait_received_wakes_on_a_delivery_and_names_what_is_missing(unlimited: Vendors, vapid: Vapid) -> None:
    send = sender(unlimited, "webhook", vapid)
    client = threading.Thread(target=send, kwargs={"timeout": 5})
    client.start()
    [received] = unlimited.wait_received("webhook", 1, timeout=5)
    client.join()
    assert received.json == {"event": "down"}
    with pytest.raises(AssertionError, match=r"2 webhook deliveries: 1 accepted of 1 attempts"):
        unlimited.wait_received("webhook", 2, timeout=0.05)


def test_unknown_vendor_is_an_error(vendors: Vendors) -> None:
    with pytest.raises(ValueError, match="unknown vendor"):
        vendors.received("pagerduty")
    assert requests.post(f"{vendors.base_url}/pagerduty/x", json={}, timeout=5).status_code == 404
