"""The fake Slack answers like an incoming webhook: messages accepted, Block Kit limits, unknown hooks, rate limit."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from py_vapid import Vapid

from tests.support.vendors import Vendors
from tests.vendors import sender


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
