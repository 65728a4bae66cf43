"""The fake Discord answers like Execute Webhook: messages, Invalid Form Body errors, bad hooks, its rate limit."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from py_vapid import Vapid

from tests.support.vendors import Vendors
from tests.vendors import sender


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
