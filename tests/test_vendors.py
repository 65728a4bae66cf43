"""The vendor fakes (tests/support/vendors.py) answer like the real APIs: what they accept, what they refuse and how,
their rate limits, and scripted failures and hangs."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import re
import smtplib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from email.message import EmailMessage
from typing import Any

import http_ece
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import Vapid
from pywebpush import WebPushException, webpush

from tests.support.vendors import VENDORS, Fail, Hang, Vendors
from tests.support.wait import wait_for

HTTP_VENDORS = [vendor for vendor in VENDORS if vendor != "smtp"]

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


@pytest.fixture
def vendors() -> Iterator[Vendors]:
    with Vendors() as fakes:
        yield fakes


@pytest.fixture
def unlimited(vendors: Vendors) -> Vendors:
    """The fakes without rate limits, for tests that send several requests to one destination."""
    for vendor in VENDORS:
        vendors.limit(vendor, 0, 0)
    return vendors


@pytest.fixture(scope="module")
def vapid() -> Vapid:
    key = Vapid()
    key.generate_keys()
    return key


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


# Resend


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


# Twilio


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


# Slack


def test_slack_accepts_a_message(unlimited: Vendors) -> None:
    hook = unlimited.slack_hook()
    payload = {
        "text": "API is down",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "API is down"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "*API* answers 503"}},
            {"type": "divider"},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": "since 10:04"}]},
            {"type": "actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": "Open"}}]},
        ],
    }
    response = requests.post(hook, json=payload, timeout=5)
    assert (response.status_code, response.text) == (200, "ok")
    assert response.headers["Content-Type"].startswith("text/plain")
    [received] = unlimited.received("slack")
    assert received.json == payload
    assert f"/{received.destination}/" in hook


def test_slack_truncates_long_text_rather_than_refusing(unlimited: Vendors) -> None:
    assert requests.post(unlimited.slack_hook(), json={"text": "x" * 40_001}, timeout=5).text == "ok"


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def blocks(*items: dict[str, Any]) -> dict[str, Any]:
    return {"text": "x", "blocks": list(items)}


def plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}


def button(text: str, **more: str) -> dict[str, Any]:
    return {"type": "actions", "elements": [{"type": "button", "text": plain(text), **more}]}


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ({}, "no_text"),
        (blocks(*[section("x")] * 51), "invalid_blocks"),
        (blocks(section("x" * 3001)), "invalid_blocks"),
        (blocks({"type": "header", "text": plain("x" * 151)}), "invalid_blocks"),
        (blocks({"type": "header", "text": {"type": "mrkdwn", "text": "x"}}), "invalid_blocks"),
        (blocks({"type": "banner", "text": "x"}), "invalid_blocks"),
        (blocks({"type": "context", "elements": [{"type": "mrkdwn", "text": "x"}] * 11}), "invalid_blocks"),
        (blocks(button("x" * 76)), "invalid_blocks"),
        (blocks(button("x", url="h" * 3001)), "invalid_blocks"),
        ({"text": "x", "blocks": {"type": "divider"}}, "invalid_blocks_format"),
    ],
)
def test_slack_refuses(unlimited: Vendors, payload: dict[str, Any], error: str) -> None:
    response = requests.post(unlimited.slack_hook(), json=payload, timeout=5)
    assert (response.status_code, response.text) == (400, error)
    assert unlimited.received("slack") == []


def test_slack_unknown_hook_is_channel_not_found(unlimited: Vendors) -> None:
    hook = unlimited.slack_hook()
    response = requests.post(hook[:-1] + ("a" if hook[-1] != "a" else "b"), json={"text": "x"}, timeout=5)
    assert (response.status_code, response.text) == (404, "channel_not_found")
    assert len(unlimited.attempts("slack")) == 1


def test_slack_rate_limit_is_one_a_second_per_hook(vendors: Vendors, vapid: Vapid) -> None:
    send, other = sender(vendors, "slack", vapid), sender(vendors, "slack", vapid)
    assert send(timeout=5).status_code == 200
    refused = send(timeout=5)
    assert (refused.status_code, refused.text) == (429, "rate_limited")
    assert refused.headers["Retry-After"] == "1"
    assert other(timeout=5).status_code == 200


# Discord


def test_discord_accepts_a_message(unlimited: Vendors) -> None:
    unlimited.limit("discord", 2.5, 5)
    hook = unlimited.discord_hook()
    fields = [{"name": "status", "value": "503", "inline": True}]
    payload = {"content": "API is down", "embeds": [{"title": "API", "color": 0xFF0000, "fields": fields}]}
    response = requests.post(hook, json=payload, timeout=5)
    assert (response.status_code, response.content) == (204, b"")
    assert response.headers["X-RateLimit-Limit"] == "5"
    assert response.headers["X-RateLimit-Remaining"] == "4"
    assert float(response.headers["X-RateLimit-Reset-After"]) > 0
    assert response.headers["X-RateLimit-Bucket"]
    waited = requests.post(hook + "?wait=true", json=payload, timeout=5)
    assert waited.status_code == 200
    message = waited.json()
    assert message["content"] == "API is down"
    assert message["webhook_id"] == hook.split("/")[-2]
    assert message["id"].isdigit()
    assert [r.json for r in unlimited.received("discord")] == [payload, payload]
    assert unlimited.received("discord")[1].query == {"wait": "true"}


def embed(**fields: Any) -> dict[str, Any]:
    return {"embeds": [{"title": "t", **fields}]}


FIELD = ["embeds", "0", "fields", "0"]


@pytest.mark.parametrize(
    ("payload", "where", "code"),
    [
        ({"content": "x" * 2001}, ["content"], "BASE_TYPE_MAX_LENGTH"),
        ({"embeds": [{"title": "t"}] * 11}, ["embeds"], "BASE_TYPE_MAX_LENGTH"),
        (embed(title="x" * 257), ["embeds", "0", "title"], "BASE_TYPE_MAX_LENGTH"),
        (embed(description="x" * 4097), ["embeds", "0", "description"], "BASE_TYPE_MAX_LENGTH"),
        (embed(fields=[{"name": "n", "value": "v"}] * 26), ["embeds", "0", "fields"], "BASE_TYPE_MAX_LENGTH"),
        (embed(fields=[{"name": "n", "value": "v" * 1025}]), [*FIELD, "value"], "BASE_TYPE_MAX_LENGTH"),
        (embed(fields=[{"name": "n"}]), [*FIELD, "value"], "BASE_TYPE_REQUIRED"),
        (embed(footer={"text": "x" * 2049}), ["embeds", "0", "footer", "text"], "BASE_TYPE_MAX_LENGTH"),
        (embed(author={"name": "x" * 257}), ["embeds", "0", "author", "name"], "BASE_TYPE_MAX_LENGTH"),
        (embed(color=0x1000000), ["embeds", "0", "color"], "NUMBER_TYPE_MAX"),
        (embed(color="red"), ["embeds", "0", "color"], "NUMBER_TYPE_COERCE"),
        ({"embeds": [{"description": "x" * 3001}] * 2}, ["embeds"], "MAX_EMBED_SIZE_EXCEEDED"),
    ],
)  # fmt: skip
def test_discord_refuses_an_invalid_form_body(
    unlimited: Vendors, payload: dict[str, Any], where: list[str], code: str
) -> None:
    response = requests.post(unlimited.discord_hook(), json=payload, timeout=5)
    assert response.status_code == 400
    error = response.json()
    assert (error["code"], error["message"]) == (50035, "Invalid Form Body")
    node = error["errors"]
    for key in where:
        node = node[key]
    assert node["_errors"][0]["code"] == code
    assert unlimited.received("discord") == []


def test_discord_refuses_unknown_hooks_bad_tokens_and_empty_messages(unlimited: Vendors) -> None:
    hook = unlimited.discord_hook()
    base, hook_id, _token = hook.rsplit("/", 2)
    unknown = requests.post(f"{base}/1{hook_id[1:]}0/x", json={"content": "x"}, timeout=5)
    assert (unknown.status_code, unknown.json()) == (404, {"message": "Unknown Webhook", "code": 10015})
    wrong = requests.post(f"{base}/{hook_id}/not-the-token", json={"content": "x"}, timeout=5)
    assert (wrong.status_code, wrong.json()["code"]) == (401, 50027)
    empty = requests.post(hook, json={"content": "", "embeds": []}, timeout=5)
    assert (empty.status_code, empty.json()["code"]) == (400, 50006)
    assert unlimited.received("discord") == []


def test_discord_rate_limit_is_five_per_two_seconds_per_hook(vendors: Vendors, vapid: Vapid) -> None:
    send = sender(vendors, "discord", vapid)
    answers = [send(timeout=5) for _ in range(6)]
    assert [a.status_code for a in answers] == [204] * 5 + [429]
    refused = answers[-1]
    body = refused.json()
    assert (body["message"], body["global"]) == ("You are being rate limited.", False)
    assert 0 < body["retry_after"] <= 0.4
    assert refused.headers["Retry-After"] == "1"
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    assert refused.headers["X-RateLimit-Scope"] == "user"
    assert len(vendors.received("discord")) == 5


# Teams


def test_teams_accepts_an_adaptive_card(unlimited: Vendors) -> None:
    workflow = unlimited.teams_workflow()
    assert "api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=" in workflow
    response = requests.post(workflow, json=CARD, timeout=5)
    assert (response.status_code, response.content) == (202, b"")
    [received] = unlimited.received("teams")
    assert received.json == CARD
    assert received.query["sp"] == "/triggers/manual/run"
    assert f"/workflows/{received.destination}/" in workflow


def attachment(**fields: Any) -> dict[str, Any]:
    """A Teams message whose attachment has ``fields`` replaced."""
    return {"type": "message", "attachments": [{**CARD["attachments"][0], **fields}]}


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"sig": "forged"}, 401),
        ({"workflow": "0" * 32}, 401),
        ({"payload": {**CARD, "type": "MessageCard"}}, 400),
        ({"payload": attachment(contentType="application/vnd.microsoft.teams.card.o365connector")}, 400),
        ({"payload": attachment(content={"type": "AdaptiveCard"})}, 400),
        ({"payload": attachment(content={"type": "MessageCard", "body": []})}, 400),
        ({"payload": {"type": "message", "attachments": []}}, 400),
        ({"payload": {**CARD, "padding": "x" * 28 * 1024}}, 413),
    ],
)
def test_teams_refuses(unlimited: Vendors, change: dict[str, Any], status: int) -> None:
    workflow = unlimited.teams_workflow()
    if "sig" in change:
        workflow = re.sub(r"sig=[^&]+", f"sig={change['sig']}", workflow)
    if "workflow" in change:
        workflow = re.sub(r"/workflows/[^/]+/", f"/workflows/{change['workflow']}/", workflow)
    response = requests.post(workflow, json=change.get("payload", CARD), timeout=5)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] and error["message"]
    assert unlimited.received("teams") == []


def test_teams_rate_limit_is_four_a_second_per_workflow(vendors: Vendors, vapid: Vapid) -> None:
    send = sender(vendors, "teams", vapid)
    answers = [send(timeout=5) for _ in range(5)]
    assert [a.status_code for a in answers] == [202] * 4 + [429]
    assert answers[-1].headers["Retry-After"] == "1"
    assert answers[-1].json()["error"]["code"] == "WorkflowRequestsThrottled"


# Generic webhook receiver


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


# Web Push


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


# SMTP


def message(to: str = "ops@example.com") -> EmailMessage:
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "Pulse <alerts@pulse.example>", to, "API is down"
    mail.set_content("API answers 503 since 10:04.")
    return mail


def test_smtp_takes_mail_with_and_without_login(vendors: Vendors) -> None:
    with smtplib.SMTP(vendors.smtp_host, vendors.smtp_port, timeout=5) as client:
        client.login("pulse", "secret")
        client.send_message(message())
    with smtplib.SMTP(vendors.smtp_host, vendors.smtp_port, timeout=5) as client:
        client.send_message(message("a@example.com, b@example.com"))
    first, second = vendors.wait_received("smtp", 2, timeout=5)
    assert first.email is not None and first.email["Subject"] == "API is down"
    assert first.email.get_content().strip() == "API answers 503 since 10:04."
    assert (first.path, first.destination) == ("alerts@pulse.example", "ops@example.com")
    assert first.query == {"auth": "pulse"}
    assert first.headers["subject"] == "API is down"
    assert (second.destination, second.query) == ("a@example.com,b@example.com", {})


def test_smtp_refuses_a_wrong_password(vendors: Vendors) -> None:
    with smtplib.SMTP(vendors.smtp_host, vendors.smtp_port, timeout=5) as client:
        with pytest.raises(smtplib.SMTPAuthenticationError) as raised:
            client.login("pulse", "wrong")
    assert raised.value.smtp_code == 535


def test_smtp_scripted_failures_and_rate_limit(vendors: Vendors) -> None:
    vendors.script("smtp", Fail(550), Fail(451, b"4.7.0 Slow down"))
    vendors.limit("smtp", 0.5, 1)
    codes = []
    with smtplib.SMTP(vendors.smtp_host, vendors.smtp_port, timeout=5) as client:
        for _ in range(4):
            try:
                client.send_message(message())
                codes.append(250)
            except smtplib.SMTPDataError as error:
                codes.append(error.smtp_code)
    assert codes == [550, 451, 250, 451]
    assert len(vendors.attempts("smtp")) == 4
    assert len(vendors.received("smtp")) == 1


def test_smtp_hang_times_out_and_close_is_prompt() -> None:
    with Vendors() as vendors:
        vendors.script("smtp", Hang())
        client = smtplib.SMTP(vendors.smtp_host, vendors.smtp_port, timeout=0.3)
        with pytest.raises(smtplib.SMTPServerDisconnected, match="timed out"):
            client.send_message(message())
        client.close()
        started = time.monotonic()
    assert time.monotonic() - started < 1
    assert vendors.received("smtp") == []
    assert len(vendors.attempts("smtp")) == 1


# Every HTTP vendor


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
