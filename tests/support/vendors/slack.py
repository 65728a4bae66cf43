"""The fake Slack incoming webhook: ``POST /slack/services/T…/B…/…``, JSON or a form's ``payload``.

Slack's documentation: "Sending messages using incoming webhooks" (https://api.slack.com/messaging/webhooks), its
error strings, and the Block Kit reference (https://api.slack.com/block-kit) for the blocks and their limits.

It answers ``ok`` or Slack's plain-text errors (``no_text``, ``invalid_blocks``, ``channel_not_found``…), and about
one message a second per hook (429 ``rate_limited`` with Retry-After).
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import string
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tests.support.vendors.base import Fake, Received, Reply, Request, loads, text_reply, whole_seconds

if TYPE_CHECKING:
    from tests.support.vendors.facade import Vendors


def _token(alphabet: str, length: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))


class Slack(Fake):
    name = "slack"
    route = re.compile(r"/slack/services/(T[A-Z0-9]+)/(B[A-Z0-9]+)/([A-Za-z0-9]+)")
    texts: Mapping[int, str] = {
        400: "invalid_payload",
        403: "action_prohibited",
        404: "channel_not_found",
        410: "channel_is_archived",
        429: "rate_limited",
        500: "rollup_error",
    }

    def __init__(self, vendors: Vendors) -> None:
        super().__init__(vendors)
        self.hooks: set[str] = set()  # paths

    def register(self) -> str:
        upper = string.ascii_uppercase + string.digits
        path = f"/slack/services/T{_token(upper, 10)}/B{_token(upper, 10)}/{_token(string.ascii_letters, 24)}"
        self.hooks.add(path)
        return self.vendors.base_url + path

    def destination(self, match: re.Match[str] | None) -> str:
        return match[2] if match else ""

    def parse(self, request: Request) -> Received:
        received = super().parse(request)
        if request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            form = dict(urllib.parse.parse_qsl(request.body.decode("utf-8", "replace")))
            return dataclasses.replace(received, form=form, json=loads(form.get("payload", "").encode()))
        return received

    def error(self, status: int, message: str, retry_after: float | None = None) -> Reply:
        return text_reply(status, self.texts.get(status, "rollup_error" if status >= 500 else "invalid_payload"))

    def handle(self, request: Request, received: Received) -> Reply:
        if request.path not in self.hooks:
            return text_reply(404, "channel_not_found")
        if request.method != "POST":
            return text_reply(405, "invalid_method")
        quota = self.vendors._take(self.name, received.destination)
        if quota is not None and quota.retry_after:
            return text_reply(429, "rate_limited", {"Retry-After": whole_seconds(quota.retry_after)})
        problem = _slack_problem(received.json)
        if problem is not None:
            return text_reply(400, problem)
        return text_reply(200, "ok", accept=True)


def _short(value: Any, limit: int) -> bool:
    return value is None or (isinstance(value, str) and len(value) <= limit)


def _slack_text(obj: Any, limit: int, *, plain: bool = False) -> bool:
    """A Block Kit text object of 1..``limit`` characters (plain_text only if ``plain``)."""
    kinds = ("plain_text",) if plain else ("plain_text", "mrkdwn")
    return (
        isinstance(obj, dict)
        and obj.get("type") in kinds
        and isinstance(obj.get("text"), str)
        and 0 < len(obj["text"]) <= limit
    )


def _slack_element(element: Any, *kinds: str) -> bool:
    """A button or image element, of one of ``kinds``."""
    if not isinstance(element, dict) or element.get("type") not in kinds:
        return False
    if element["type"] == "image":
        return isinstance(element.get("image_url"), str) and isinstance(element.get("alt_text"), str)
    return (
        _slack_text(element.get("text"), 75, plain=True)
        and _short(element.get("url"), 3000)
        and _short(element.get("value"), 2000)
        and _short(element.get("action_id"), 255)
        and element.get("style") in (None, "primary", "danger")
    )


def _slack_block(block: Any) -> bool:
    """Whether a block is one of the known types, within Block Kit's limits."""
    if not isinstance(block, dict) or not _short(block.get("block_id"), 255):
        return False
    kind = block.get("type")
    if kind == "divider":
        return True
    if kind == "header":
        return _slack_text(block.get("text"), 150, plain=True)
    if kind == "markdown":
        return isinstance(block.get("text"), str) and 0 < len(block["text"]) <= 12000
    if kind == "section":
        text, fields, accessory = block.get("text"), block.get("fields"), block.get("accessory")
        return (
            (text is not None or fields is not None)
            and (text is None or _slack_text(text, 3000))
            and (fields is None or (isinstance(fields, list) and 0 < len(fields) <= 10))
            and all(_slack_text(field, 2000) for field in fields or [])
            and (accessory is None or _slack_element(accessory, "button", "image"))
        )
    elements = block.get("elements")
    if kind == "context":
        return (
            isinstance(elements, list)
            and 0 < len(elements) <= 10
            and all(_slack_text(e, 3000) or _slack_element(e, "image") for e in elements)
        )
    if kind == "actions":
        return (
            isinstance(elements, list)
            and 0 < len(elements) <= 25
            and all(_slack_element(e, "button") for e in elements)
        )
    return False


def _slack_problem(payload: Any) -> str | None:
    """Slack's error string for an incoming-webhook body, or None. ``text`` over 40,000 is truncated, not refused."""
    if not isinstance(payload, dict) or not isinstance(payload.get("text", ""), str):
        return "invalid_payload"
    blocks = payload.get("blocks")
    if not payload.get("text") and not blocks and not payload.get("attachments"):
        return "no_text"
    if blocks is None:
        return None
    if not isinstance(blocks, list):
        return "invalid_blocks_format"
    if len(blocks) > 50 or not all(_slack_block(block) for block in blocks):
        return "invalid_blocks"
    return None
