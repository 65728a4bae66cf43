"""The fake Discord webhook: ``POST /discord/api/webhooks/{id}/{token}``, ``?wait=true`` for the message.

Discord's documentation: "Execute Webhook" (https://discord.com/developers/docs/resources/webhook#execute-webhook),
the embed limits (https://discord.com/developers/docs/resources/message#embed-object-embed-limits) and "Rate Limits"
(https://discord.com/developers/docs/topics/rate-limits).

It checks the webhook and its token, the embed limits (a 50035 Invalid Form Body with its ``errors`` tree), refuses
an empty message (50006), and limits each webhook to 5 requests per 2 seconds with the X-RateLimit-* headers.
"""

from __future__ import annotations

import dataclasses
import datetime
import hmac
import re
import secrets
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tests.support.vendors.base import Fake, Received, Reply, Request, json_reply, phrase, whole_seconds

if TYPE_CHECKING:
    from tests.support.vendors.facade import Vendors


@dataclasses.dataclass(frozen=True)
class _DiscordHook:
    token: str
    channel_id: str
    bucket: str


def _snowflake() -> str:
    return str(10**18 + secrets.randbelow(9 * 10**18))


class Discord(Fake):
    name = "discord"
    route = re.compile(r"/discord/api(?:/v\d+)?/webhooks/(\d+)/([^/]+)")

    def __init__(self, vendors: Vendors) -> None:
        super().__init__(vendors)
        self.hooks: dict[str, _DiscordHook] = {}

    def register(self) -> str:
        hook_id, token = _snowflake(), secrets.token_urlsafe(51)
        self.hooks[hook_id] = _DiscordHook(token, _snowflake(), secrets.token_hex(16))
        return f"{self.vendors.base_url}/discord/api/webhooks/{hook_id}/{token}"

    def error(self, status: int, message: str, retry_after: float | None = None) -> Reply:
        if status == 429:
            wait = 1.0 if retry_after is None else retry_after
            return json_reply(429, {"message": "You are being rate limited.", "retry_after": wait, "global": False})
        known = {
            400: {"code": 50035, "errors": {}, "message": "Invalid Form Body"},
            401: {"message": "Invalid Webhook Token", "code": 50027},
            403: {"message": "Missing Permissions", "code": 50013},
            404: {"message": "Unknown Webhook", "code": 10015},
        }
        return json_reply(status, known.get(status, {"message": f"{status}: {phrase(status)}", "code": 0}))

    def handle(self, request: Request, received: Received) -> Reply:
        match = self.route.fullmatch(request.path)
        hook = self.hooks.get(match[1]) if match else None
        if match is None or hook is None:
            return json_reply(404, {"message": "Unknown Webhook", "code": 10015})
        if not hmac.compare_digest(match[2], hook.token):
            return json_reply(401, {"message": "Invalid Webhook Token", "code": 50027})
        if request.method != "POST":
            return json_reply(405, {"message": "405: Method Not Allowed", "code": 0})
        quota = self.vendors._take(self.name, received.destination)
        headers: dict[str, str] = {}
        if quota is not None:
            headers = {
                "X-RateLimit-Limit": str(quota.limit),
                "X-RateLimit-Remaining": str(quota.remaining),
                "X-RateLimit-Reset": f"{time.time() + quota.reset_after:.3f}",
                "X-RateLimit-Reset-After": f"{quota.reset_after:.3f}",
                "X-RateLimit-Bucket": hook.bucket,
            }
            if quota.retry_after:
                wait = round(quota.retry_after, 3)
                headers.update({"Retry-After": whole_seconds(wait), "X-RateLimit-Scope": "user"})
                body = {"message": "You are being rate limited.", "retry_after": wait, "global": False}
                return json_reply(429, body, headers)
        payload = received.json
        if not isinstance(payload, dict):
            return json_reply(400, {"message": "The request body contains invalid JSON.", "code": 50109}, headers)
        errors = _discord_errors(payload)
        if errors:
            return json_reply(400, {"code": 50035, "errors": errors, "message": "Invalid Form Body"}, headers)
        if not any(payload.get(field) for field in ("content", "embeds", "components", "poll")):
            return json_reply(400, {"message": "Cannot send an empty message", "code": 50006}, headers)
        if request.query.get("wait", "").lower() not in ("true", "1"):
            return Reply(204, b"", headers, accept=True)
        message = {
            "id": _snowflake(),
            "type": 0,
            "content": payload.get("content") or "",
            "channel_id": hook.channel_id,
            "author": {"id": match[1], "username": payload.get("username") or "Captain Hook", "bot": True},
            "attachments": [],
            "embeds": [{"type": "rich", **embed} for embed in payload.get("embeds") or []],
            "mentions": [],
            "mention_roles": [],
            "pinned": False,
            "mention_everyone": False,
            "tts": bool(payload.get("tts")),
            "timestamp": datetime.datetime.now(datetime.UTC).isoformat(),
            "edited_timestamp": None,
            "flags": 0,
            "components": [],
            "webhook_id": match[1],
        }
        return json_reply(200, message, headers, accept=True)


def _discord_errors(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The ``errors`` tree of a 50035 Invalid Form Body, empty if the body is valid."""
    errors: dict[str, Any] = {}

    def put(where: tuple[str | int, ...], code: str, message: str) -> None:
        node = errors
        for key in where:
            node = node.setdefault(str(key), {})
        node.setdefault("_errors", []).append({"code": code, "message": message})

    def text(value: Any, where: tuple[str | int, ...], limit: int, required: bool = False) -> int:
        if value is None and not required:
            return 0
        if not isinstance(value, str) or (required and not value):
            put(where, "BASE_TYPE_REQUIRED" if value in (None, "") else "STRING_TYPE_CONVERT", "Must be a string.")
            return 0
        if len(value) > limit:
            put(where, "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")
        return len(value)

    text(payload.get("content"), ("content",), 2000)
    embeds = payload.get("embeds")
    if embeds is None:
        return errors
    if not isinstance(embeds, list):
        put(("embeds",), "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType")
        return errors
    if len(embeds) > 10:
        put(("embeds",), "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length.")
        return errors
    total = 0
    for i, embed in enumerate(embeds):
        at: tuple[str | int, ...] = ("embeds", i)
        if not isinstance(embed, dict):
            put(at, "MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType")
            continue
        total += text(embed.get("title"), (*at, "title"), 256)
        total += text(embed.get("description"), (*at, "description"), 4096)
        footer, author = embed.get("footer") or {}, embed.get("author") or {}
        total += text(footer.get("text") if isinstance(footer, dict) else footer, (*at, "footer", "text"), 2048)
        total += text(author.get("name") if isinstance(author, dict) else author, (*at, "author", "name"), 256)
        color = embed.get("color")
        if color is not None and (not isinstance(color, int) or isinstance(color, bool)):
            put((*at, "color"), "NUMBER_TYPE_COERCE", f'Value "{color}" is not int.')
        elif color is not None and not 0 <= color <= 0xFFFFFF:
            put((*at, "color"), "NUMBER_TYPE_MAX", "int value should be less than or equal to 16777215.")
        fields = embed.get("fields") or []
        if not isinstance(fields, list) or len(fields) > 25:
            put((*at, "fields"), "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
            continue
        for j, field in enumerate(fields):
            entry = field if isinstance(field, dict) else {}  # a non-object has no name or value
            total += text(entry.get("name"), (*at, "fields", j, "name"), 256, required=True)
            total += text(entry.get("value"), (*at, "fields", j, "value"), 1024, required=True)
    if total > 6000:
        put(("embeds",), "MAX_EMBED_SIZE_EXCEEDED", "Embed size exceeds maximum size of 6000")
    return errors
