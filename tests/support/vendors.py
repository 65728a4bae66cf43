"""Local fakes of the notification vendors' APIs: Resend, Twilio, Slack, Discord, Teams, a webhook receiver, Web Push
and SMTP.

    with Vendors() as vendors:
        hook = vendors.slack_hook()
        vendors.script("slack", Fail(500), Hang())
        ...notify through Pulse...
        [message] = vendors.wait_received("slack", 1)
        assert message.json["text"] == "down"

One ThreadingHTTPServer on 127.0.0.1 serves every HTTP vendor under a path prefix (/resend, /twilio, /slack,
/discord, /teams, /webhook, /push) and an aiosmtpd server takes mail. Each fake checks what the real API checks
(credentials, required fields, size limits, rate limits; see /work/shared/reference/external-apis.md) and answers
with that vendor's status and error body. Every request is recorded in `Vendors.attempts`; accepted ones also in
`Vendors.received`. `Vendors.script` replaces the next answers with a `Fail` or a `Hang`. Hangs wait on an event that
`Vendors.close` sets, and close shuts the open connections, so closing never waits for a client.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import datetime
import email
import email.policy
import email.utils
import hashlib
import hmac
import http
import http.server
import json
import logging
import math
import re
import secrets
import select
import socket
import string
import threading
import time
import urllib.parse
import uuid
from collections import deque
from collections.abc import Mapping
from email.message import EmailMessage
from types import TracebackType
from typing import Any, cast

import http_ece
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

VENDORS = ("resend", "twilio", "slack", "discord", "teams", "webhook", "push", "smtp")

# (tokens per second, burst) per destination; 0 tokens per second means no limit.
DEFAULT_LIMITS: Mapping[str, tuple[float, int]] = {
    "resend": (2.0, 2),  # 2 req/s per team
    "twilio": (0.0, 0),
    "slack": (1.0, 1),  # about 1 message/s per hook
    "discord": (2.5, 5),  # 5 per 2 s per webhook
    "teams": (4.0, 4),  # 4 req/s per workflow
    "webhook": (0.0, 0),
    "push": (0.0, 0),
    "smtp": (0.0, 0),
}


@dataclasses.dataclass(frozen=True)
class Received:
    """One request (for smtp: one message) as a fake received it.

    ``headers`` has lower-cased names. ``json`` is the body parsed as JSON (Slack: also a form's ``payload``),
    ``form`` the body parsed as application/x-www-form-urlencoded (Twilio), ``plaintext`` a push message's decrypted
    payload and ``email`` the parsed smtp message. ``destination`` names the rate-limit bucket: the Slack hook's B…
    id, the Discord webhook id, the Teams workflow id, the webhook receiver's name, the push subscription id, "team"
    for Resend, the account sid for Twilio, the recipients joined with "," for smtp ("" when the URL is unknown).
    For smtp, ``method`` is "DATA", ``path`` the envelope sender, ``headers`` the message's headers and ``query``
    holds ``auth``, the login, when the client authenticated.
    """

    vendor: str
    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes
    json: Any | None = None
    form: Mapping[str, str] | None = None
    plaintext: bytes | None = None
    email: EmailMessage | None = None
    at: float = dataclasses.field(default_factory=time.monotonic)
    destination: str = ""


@dataclasses.dataclass(frozen=True)
class Fail:
    """A scripted error answer.

    Parameters:
      status: the HTTP status (for smtp: the reply code, e.g. 451 or 550).
      body: the body; None means the vendor's own error body for ``status`` (for smtp: the reply text).
      headers: extra response headers, added last.
      retry_after: sets Retry-After (and the ``retry_after`` field of Discord's body).
    """

    status: int
    body: bytes | None = None
    headers: Mapping[str, str] | None = None
    retry_after: float | None = None


@dataclasses.dataclass(frozen=True)
class Hang:
    """A scripted non-answer: the request waits until the client hangs up or the `Vendors` closes."""


Answer = Fail | Hang


@dataclasses.dataclass(frozen=True)
class _Request:
    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes


@dataclasses.dataclass
class _Reply:
    """An answer; ``accept`` puts the request in `Vendors.received`."""

    status: int
    body: bytes = b""
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    accept: bool = False


def _json_reply(status: int, payload: Any, headers: Mapping[str, str] | None = None, accept: bool = False) -> _Reply:
    return _Reply(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})}, accept)


def _text_reply(status: int, text: str, headers: Mapping[str, str] | None = None, accept: bool = False) -> _Reply:
    return _Reply(status, text.encode(), {"Content-Type": "text/plain; charset=utf-8", **(headers or {})}, accept)


def _loads(body: bytes) -> Any | None:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _seconds(value: float) -> str:
    """A scripted Retry-After: whole seconds as an integer, anything else as given."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _whole_seconds(value: float) -> str:
    """A computed Retry-After: whole seconds, at least 1."""
    return str(max(1, math.ceil(value)))


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _token(alphabet: str, length: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))


@dataclasses.dataclass
class _Bucket:
    """A token bucket on time.monotonic()."""

    rate: float
    burst: int
    tokens: float
    last: float

    def take(self, now: float) -> float:
        """Take a token; return 0 if there was one, else the seconds until there is."""
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


@dataclasses.dataclass(frozen=True)
class _Quota:
    """What taking a token left: ``retry_after`` 0 means the request may go on."""

    limit: int
    remaining: int
    reset_after: float
    retry_after: float


class _Fake:
    """One HTTP vendor: how to read, check and answer a request, and its error format."""

    name = ""
    route = re.compile(r"$^")

    def __init__(self, vendors: Vendors) -> None:
        self.vendors = vendors

    def destination(self, match: re.Match[str] | None) -> str:
        return match[1] if match else ""

    def parse(self, request: _Request) -> Received:
        match = self.route.fullmatch(request.path)
        return Received(
            self.name,
            request.method,
            request.path,
            request.query,
            request.headers,
            request.body,
            json=_loads(request.body),
            destination=self.destination(match),
        )

    def handle(self, request: _Request, received: Received) -> _Reply:
        raise NotImplementedError

    def error(self, status: int, message: str, retry_after: float | None = None) -> _Reply:
        """The vendor's error answer for ``status``."""
        raise NotImplementedError

    def fail(self, fail: Fail) -> _Reply:
        if fail.body is None:
            reply = self.error(fail.status, "Scripted failure", fail.retry_after)
        else:
            kind = "application/json" if _loads(fail.body) is not None else "text/plain; charset=utf-8"
            reply = _Reply(fail.status, fail.body, {"Content-Type": kind})
        if fail.retry_after is not None:
            reply.headers["Retry-After"] = _seconds(fail.retry_after)
        reply.headers.update(fail.headers or {})
        return reply


class _Resend(_Fake):
    name = "resend"
    route = re.compile(r"/resend/emails")
    names: Mapping[int, str] = {
        400: "validation_error",
        401: "missing_api_key",
        403: "invalid_api_key",
        404: "not_found",
        405: "method_not_allowed",
        409: "invalid_idempotent_request",
        422: "validation_error",
        429: "rate_limit_exceeded",
        500: "internal_server_error",
    }

    def __init__(self, vendors: Vendors) -> None:
        super().__init__(vendors)
        self.keys: dict[str, tuple[Any, str]] = {}  # Idempotency-Key: (payload, email id)

    def destination(self, match: re.Match[str] | None) -> str:
        return "team"

    def error(self, status: int, message: str, retry_after: float | None = None) -> _Reply:
        name = self.names.get(status, "application_error" if status >= 500 else "validation_error")
        return self._error(status, name, message)

    def _error(self, status: int, name: str, message: str, headers: Mapping[str, str] | None = None) -> _Reply:
        return _json_reply(status, {"statusCode": status, "name": name, "message": message}, headers)

    def handle(self, request: _Request, received: Received) -> _Reply:
        if not self.route.fullmatch(request.path):
            return self._error(404, "not_found", "The requested endpoint does not exist.")
        if request.method != "POST":
            return self._error(405, "method_not_allowed", "Method is not allowed for the requested path.")
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            return self._error(
                401,
                "missing_api_key",
                "Missing API key in the authorization header. "
                "Include the following header in the request: Authorization: Bearer YOUR_API_KEY",
            )
        if key.strip() != self.vendors.resend_key:
            return self._error(403, "invalid_api_key", "API key is invalid")
        quota = self.vendors._take(self.name, received.destination)
        headers: dict[str, str] = {}
        if quota is not None:
            headers = {
                "ratelimit-limit": str(quota.limit),
                "ratelimit-remaining": str(quota.remaining),
                "ratelimit-reset": str(math.ceil(quota.reset_after)),
            }
            if quota.retry_after:
                headers["retry-after"] = _whole_seconds(quota.retry_after)
                message = (
                    f"Too many requests. You can only make {quota.limit} requests per second. "
                    "See rate limit response headers for more information."
                )
                return self._error(429, "rate_limit_exceeded", message, headers)
        payload = received.json
        if not isinstance(payload, dict):
            return self._error(400, "validation_error", "The request body must be a JSON object.", headers)
        idempotency = request.headers.get("idempotency-key")
        if idempotency is not None and not 1 <= len(idempotency) <= 256:
            return self._error(400, "invalid_idempotency_key", "The key must be between 1-256 chars.", headers)
        with self.vendors._lock:  # check, validate and store at once, so a concurrent repeat is a repeat
            if idempotency is not None and idempotency in self.keys:
                first, email_id = self.keys[idempotency]
                if first != payload:
                    message = (
                        "Same idempotency key used with a different request payload. "
                        "Change your idempotency key or payload."
                    )
                    return self._error(409, "invalid_idempotent_request", message, headers)
                return _json_reply(200, {"id": email_id}, headers)  # the first answer, not a second email
            problem = _resend_problem(payload)
            if problem is not None:
                return self._error(422, *problem, headers)
            email_id = str(uuid.uuid4())
            if idempotency is not None:
                self.keys[idempotency] = (payload, email_id)
        return _json_reply(200, {"id": email_id}, headers, accept=True)


def _address_ok(text: Any) -> bool:
    """``a@b.c`` or ``Name <a@b.c>``."""
    if not isinstance(text, str):
        return False
    match = re.fullmatch(r"[^<>]*<([^<>]+)>|([^<>]+)", text.strip())
    address = (match[1] or match[2]).strip() if match else ""
    return re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", address) is not None


def _resend_problem(payload: Mapping[str, Any]) -> tuple[str, str] | None:
    """(name, message) of the 422 for a send-email body, or None."""
    for field in ("from", "to", "subject"):
        if payload.get(field) in (None, "", []):
            return "missing_required_field", f"Missing `{field}` field."
    address_format = "The email address needs to follow the `email@example.com` or `Name <email@example.com>` format."
    if not _address_ok(payload["from"]):
        return "validation_error", f"Invalid `from` field. {address_format}"
    to = payload["to"]
    recipients = [to] if isinstance(to, str) else to
    if not isinstance(recipients, list) or not all(_address_ok(r) for r in recipients):
        return "validation_error", f"Invalid `to` field. {address_format}"
    if len(recipients) > 50:
        return "validation_error", "Invalid `to` field. You can only send to up to 50 recipients."
    if not isinstance(payload["subject"], str):
        return "validation_error", "Invalid `subject` field. It must be a string."
    if not any(isinstance(payload.get(field), str) and payload[field] for field in ("html", "text")):
        return "missing_required_field", "Missing `html` or `text` field."
    return None


_E164 = re.compile(r"\+[1-9]\d{1,14}")
_SENDER = re.compile(r"\+[1-9]\d{1,14}|\d{5,6}|(?=.*[A-Za-z])[A-Za-z0-9 ]{1,11}")  # number, short code, sender id
_GSM = set(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿"
    "abcdefghijklmnopqrstuvwxyzäöñüà"
)
_GSM_EXTENDED = set("^{}\\[~]|€\f")


def _segments(body: str) -> int:
    """SMS segments: GSM-7 packs 160 (153 when split), UCS-2 70 (67)."""
    if all(c in _GSM or c in _GSM_EXTENDED for c in body):
        units, single, split = sum(2 if c in _GSM_EXTENDED else 1 for c in body), 160, 153
    else:
        units, single, split = len(body.encode("utf-16-le")) // 2, 70, 67
    return 1 if units <= single else math.ceil(units / split)


class _Twilio(_Fake):
    name = "twilio"
    route = re.compile(r"/twilio/2010-04-01/Accounts/([^/]+)/Messages\.json")

    def parse(self, request: _Request) -> Received:
        received = super().parse(request)
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            return received
        form = dict(urllib.parse.parse_qsl(request.body.decode("utf-8", "replace"), keep_blank_values=True))
        return dataclasses.replace(received, json=None, form=form)

    def error(self, status: int, message: str, retry_after: float | None = None) -> _Reply:
        code = {401: 20003, 405: 20004}.get(status, 20000 + status)
        return self._error(status, code, message)

    def _error(self, status: int, code: int, message: str, **extra: str) -> _Reply:
        more_info = f"https://www.twilio.com/docs/errors/{code}"
        return _json_reply(
            status, {"code": code, "message": message, "more_info": more_info, "status": status, **extra}
        )

    def handle(self, request: _Request, received: Received) -> _Reply:
        match = self.route.fullmatch(request.path)
        if match is None:
            return self._error(404, 20404, f"The requested resource {request.path} was not found")
        sid = self.vendors.twilio_sid
        if _basic_auth(request.headers) != (sid, self.vendors.twilio_token):
            return self._error(401, 20003, "Authenticate", detail="Your AccountSid or AuthToken was incorrect.")
        if match[1] != sid:
            return self._error(404, 20404, f"The requested resource {request.path} was not found")
        if request.method != "POST":
            return self._error(405, 20004, "Method not allowed")
        quota = self.vendors._take(self.name, received.destination)
        if quota is not None and quota.retry_after:
            return self._error(429, 20429, "Too Many Requests")  # no Retry-After is documented
        form = received.form or {}
        to, sender, service = form.get("To", ""), form.get("From", ""), form.get("MessagingServiceSid", "")
        body = form.get("Body", "")
        if not to:
            return self._error(400, 21604, "A 'To' phone number is required.")
        if not sender and not service:
            return self._error(400, 21603, "A 'From' phone number is required.")
        if not _E164.fullmatch(to):
            return self._error(400, 21211, f"Invalid 'To' Phone Number: {to}")
        if sender and not _SENDER.fullmatch(sender):
            return self._error(400, 21212, f"Invalid From Number (caller ID): {sender}")
        if not body and "MediaUrl" not in form and "ContentSid" not in form:
            return self._error(400, 21602, "Message body is required.")
        if len(body) > 1600:
            return self._error(400, 21617, "The concatenated message body exceeds the 1600 character limit.")
        message_sid = "SM" + secrets.token_hex(16)
        now = email.utils.format_datetime(datetime.datetime.now(datetime.UTC))
        uri = f"/2010-04-01/Accounts/{sid}/Messages/{message_sid}"
        message = {
            "account_sid": sid,
            "api_version": "2010-04-01",
            "body": body,
            "date_created": now,
            "date_sent": None,
            "date_updated": now,
            "direction": "outbound-api",
            "error_code": None,
            "error_message": None,
            "from": sender or None,
            "messaging_service_sid": service or None,
            "num_media": "1" if "MediaUrl" in form else "0",
            "num_segments": str(_segments(body)),
            "price": None,
            "price_unit": "USD",
            "sid": message_sid,
            "status": "accepted" if service and not sender else "queued",
            "subresource_uris": {"media": f"{uri}/Media.json"},
            "to": to,
            "uri": f"{uri}.json",
        }
        return _json_reply(201, message, accept=True)


def _basic_auth(headers: Mapping[str, str]) -> tuple[str, str] | None:
    scheme, _, encoded = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
    except ValueError:
        return None
    return user, password


class _Slack(_Fake):
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

    def parse(self, request: _Request) -> Received:
        received = super().parse(request)
        if request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            form = dict(urllib.parse.parse_qsl(request.body.decode("utf-8", "replace")))
            return dataclasses.replace(received, form=form, json=_loads(form.get("payload", "").encode()))
        return received

    def error(self, status: int, message: str, retry_after: float | None = None) -> _Reply:
        return _text_reply(status, self.texts.get(status, "rollup_error" if status >= 500 else "invalid_payload"))

    def handle(self, request: _Request, received: Received) -> _Reply:
        if request.path not in self.hooks:
            return _text_reply(404, "channel_not_found")
        if request.method != "POST":
            return _text_reply(405, "invalid_method")
        quota = self.vendors._take(self.name, received.destination)
        if quota is not None and quota.retry_after:
            return _text_reply(429, "rate_limited", {"Retry-After": _whole_seconds(quota.retry_after)})
        problem = _slack_problem(received.json)
        if problem is not None:
            return _text_reply(400, problem)
        return _text_reply(200, "ok", accept=True)


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


@dataclasses.dataclass(frozen=True)
class _DiscordHook:
    token: str
    channel_id: str
    bucket: str


def _snowflake() -> str:
    return str(10**18 + secrets.randbelow(9 * 10**18))


class _Discord(_Fake):
    name = "discord"
    route = re.compile(r"/discord/api(?:/v\d+)?/webhooks/(\d+)/([^/]+)")

    def __init__(self, vendors: Vendors) -> None:
        super().__init__(vendors)
        self.hooks: dict[str, _DiscordHook] = {}

    def register(self) -> str:
        hook_id, token = _snowflake(), secrets.token_urlsafe(51)
        self.hooks[hook_id] = _DiscordHook(token, _snowflake(), secrets.token_hex(16))
        return f"{self.vendors.base_url}/discord/api/webhooks/{hook_id}/{token}"

    def error(self, status: int, message: str, retry_after: float | None = None) -> _Reply:
        if status == 429:
            wait = 1.0 if retry_after is None else retry_after
            return _json_reply(429, {"message": "You are being rate limited.", "retry_after": wait, "global": False})
        known = {
            400: {"code": 50035, "errors": {}, "message": "Invalid Form Body"},
            401: {"message": "Invalid Webhook Token", "code": 50027},
            403: {"message": "Missing Permissions", "code": 50013},
            404: {"message": "Unknown Webhook", "code": 10015},
        }
        return _json_reply(status, known.get(status, {"message": f"{status}: {_phrase(status)}", "code": 0}))

    def handle(self, request: _Request, received: Received) -> _Reply:
        match = self.route.fullmatch(request.path)
        hook = self.hooks.get(match[1]) if match else None
        if match is None or hook is None:
            return _json_reply(404, {"message": "Unknown Webhook", "code": 10015})
        if not hmac.compare_digest(match[2], hook.token):
            return _json_reply(401, {"message": "Invalid Webhook Token", "code": 50027})
        if request.method != "POST":
            return _json_reply(405, {"message": "405: Method Not Allowed", "code": 0})
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
                headers.update({"Retry-After": _whole_seconds(wait), "X-RateLimit-Scope": "user"})
                body = {"message": "You are being rate limited.", "retry_after": wait, "global": False}
                return _json_reply(429, body, headers)
        payload = received.json
        if not isinstance(payload, dict):
            return _json_reply(400, {"message": "The request body contains invalid JSON.", "code": 50109}, headers)
        errors = _discord_errors(payload)
        if errors:
            return _json_reply(400, {"code": 50035, "errors": errors, "message": "Invalid Form Body"}, headers)
        if not any(payload.get(field) for field in ("content", "embeds", "components", "poll")):
            return _json_reply(400, {"message": "Cannot send an empty message", "code": 50006}, headers)
        if request.query.get("wait", "").lower() not in ("true", "1"):
            return _Reply(204, b"", headers, accept=True)
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
        return _json_reply(200, message, headers, accept=True)


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


_ADAPTIVE = "application/vnd.microsoft.card.adaptive"


class _Teams(_Fake):
    name = "teams"
    route = re.compile(r"/teams/workflows/([^/]+)/triggers/manual/paths/invoke")
    max_body = 28 * 1024

    def __init__(self, vendors: Vendors) -> None:
        super().__init__(vendors)
        self.workflows: dict[str, str] = {}  # id: sig

    def register(self) -> str:
        workflow, sig = secrets.token_hex(16), secrets.token_urlsafe(32)
        self.workflows[workflow] = sig
        query = urllib.parse.urlencode(
            {"api-version": "2016-06-01", "sp": "/triggers/manual/run", "sv": "1.0", "sig": sig}
        )
        return f"{self.vendors.base_url}/teams/workflows/{workflow}/triggers/manual/paths/invoke?{query}"

    def error(self, status: int, message: str, retry_after: float | None = None) -> _Reply:
        return self._error(status, _phrase(status).replace(" ", ""), message)

    def _error(self, status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> _Reply:
        return _json_reply(status, {"error": {"code": code, "message": message}}, headers)

    def handle(self, request: _Request, received: Received) -> _Reply:
        match = self.route.fullmatch(request.path)
        sig = self.workflows.get(match[1]) if match else None
        given = request.query.get("sig", "")
        if not given:
            message = "The request must be authenticated only by Shared Access scheme."
            return self._error(401, "DirectApiAuthorizationRequired", message)
        if sig is None or not hmac.compare_digest(given, sig):
            return self._error(401, "DirectApiInvalidAuthorizationSignature", "The provided 'sig' is not valid.")
        if "api-version" not in request.query:
            message = "The api-version query parameter (?api-version=) is required for all requests."
            return self._error(400, "MissingApiVersionParameter", message)
        if request.method != "POST":
            message = f"The HTTP method for this request is not valid: expected 'Post' and actual '{request.method}'."
            return self._error(405, "TriggerRequestMethodNotValid", message)
        quota = self.vendors._take(self.name, received.destination)
        if quota is not None and quota.retry_after:
            headers = {"Retry-After": _whole_seconds(quota.retry_after)}
            message = "The workflow's trigger is being throttled: more than 4 requests a second."
            return self._error(429, "WorkflowRequestsThrottled", message, headers)
        if len(request.body) > self.max_body:
            message = f"The request content length {len(request.body)} exceeds the limit of {self.max_body} bytes."
            return self._error(413, "MessageTooLarge", message)
        problem = _teams_problem(received.json)
        if problem is not None:
            return self._error(400, "InvalidRequestContent", problem)
        return _Reply(202, b"", {"x-ms-workflow-run-id": secrets.token_hex(16)}, accept=True)


def _teams_problem(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return "The request content must be a JSON object."
    if payload.get("type") != "message":
        return "The 'type' property must be 'message'."
    attachments = payload.get("attachments")
    if not isinstance(attachments, list) or not attachments:
        return "The 'attachments' property must be a non-empty array."
    for attachment in attachments:
        if not isinstance(attachment, dict) or attachment.get("contentType") != _ADAPTIVE:
            return f"Every attachment's contentType must be '{_ADAPTIVE}'."
        content = attachment.get("content")
        if not isinstance(content, dict) or content.get("type") != "AdaptiveCard":
            return "Every attachment's content must be an AdaptiveCard."
        if not isinstance(content.get("body"), list):
            return "The AdaptiveCard must have a 'body' array."
    return None


class _Webhook(_Fake):
    name = "webhook"
    route = re.compile(r"/webhook/([^/]+)")
    tolerance = 300  # seconds between X-Pulse-Timestamp and now

    def __init__(self, vendors: Vendors) -> None:
        super().__init__(vendors)
        self.receivers: dict[str, str | None] = {}  # name: secret

    def register(self, secret: str | None) -> str:
        name = f"r{len(self.receivers) + 1}-{secrets.token_hex(4)}"
        self.receivers[name] = secret
        return f"{self.vendors.base_url}/webhook/{name}"

    def error(self, status: int, message: str, retry_after: float | None = None) -> _Reply:
        return _json_reply(status, {"ok": False, "error": message})

    def handle(self, request: _Request, received: Received) -> _Reply:
        if received.destination not in self.receivers:
            return self.error(404, "no such receiver")
        if request.method != "POST":
            return self.error(405, "use POST")
        secret = self.receivers[received.destination]
        problem = None if secret is None else self.signature_problem(request, secret)
        if problem is not None:
            return self.error(401, problem)
        if received.json is None and request.body.strip() != b"null":
            return self.error(400, "the body is not JSON")
        return _json_reply(200, {"ok": True}, accept=True)

    def signature_problem(self, request: _Request, secret: str) -> str | None:
        delivery = request.headers.get("x-pulse-delivery", "")
        stamp = request.headers.get("x-pulse-timestamp", "")
        signature = request.headers.get("x-pulse-signature", "")
        if not delivery or not stamp or not signature:
            return "X-Pulse-Delivery, X-Pulse-Timestamp and X-Pulse-Signature are required"
        if not re.fullmatch(r"\d{1,12}", stamp, re.ASCII) or abs(time.time() - int(stamp)) > self.tolerance:
            return "X-Pulse-Timestamp is not within 5 minutes of now"
        expected = hmac.new(secret.encode(), stamp.encode() + b"." + request.body, hashlib.sha256).hexdigest()
        given = [part.strip()[3:] for part in signature.split(",") if part.strip().startswith("v1=")]
        if not any(hmac.compare_digest(value, expected) for value in given):
            return "X-Pulse-Signature does not match"
        return None


@dataclasses.dataclass
class _Subscription:
    key: ec.EllipticCurvePrivateKey
    auth: bytes
    server_key: bytes | None  # the applicationServerKey it was made with, if any
    gone: int | None = None  # the status once unsubscribed


class _Push(_Fake):
    name = "push"
    route = re.compile(r"/push/([^/]+)")
    max_body = 4096
    urgencies = ("very-low", "low", "normal", "high")
    errnos: Mapping[int, int] = {401: 109, 403: 109, 404: 102, 410: 106, 413: 104, 415: 110}

    def __init__(self, vendors: Vendors) -> None:
        super().__init__(vendors)
        self.subscriptions: dict[str, _Subscription] = {}

    def register(self, application_server_key: str | None) -> dict[str, Any]:
        key, auth, sub_id = ec.generate_private_key(ec.SECP256R1()), secrets.token_bytes(16), secrets.token_urlsafe(24)
        server_key = None if application_server_key is None else _unb64(application_server_key)
        self.subscriptions[sub_id] = _Subscription(key, auth, server_key)
        public = key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {
            "endpoint": f"{self.vendors.base_url}/push/{sub_id}",
            "keys": {"p256dh": _b64(public), "auth": _b64(auth)},
        }

    def parse(self, request: _Request) -> Received:
        received = super().parse(request)
        subscription = self.subscriptions.get(received.destination)
        if subscription is None:
            return received
        if not request.body:
            return dataclasses.replace(received, json=None, plaintext=b"")
        plaintext = None
        if request.headers.get("content-encoding", "").lower() == "aes128gcm":
            plaintext = _decrypt(request.body, subscription)
        return dataclasses.replace(received, json=None, plaintext=plaintext)

    def error(self, status: int, message: str, retry_after: float | None = None) -> _Reply:
        return self._error(status, self.errnos.get(status, 999), message)

    def _error(self, status: int, errno: int, message: str, headers: Mapping[str, str] | None = None) -> _Reply:
        body = {
            "code": status,
            "errno": errno,
            "error": _phrase(status),
            "message": message,
            "more_info": "http://autopush.readthedocs.io/en/latest/http.html#error-codes",
        }
        return _json_reply(status, body, headers)

    def handle(self, request: _Request, received: Received) -> _Reply:
        subscription = self.subscriptions.get(received.destination)
        if subscription is None:
            return self._error(404, 102, "Request did not validate invalid token")
        if subscription.gone is not None:
            return self._error(subscription.gone, self.errnos.get(subscription.gone, 106), "No such subscription")
        if request.method != "POST":
            return self._error(405, 115, "Method not allowed")
        problem = self.vapid_problem(request.headers.get("authorization", ""), subscription)
        if problem is not None:
            return self._error(problem[0], 109, problem[1])
        ttl = request.headers.get("ttl")
        if ttl is None:
            return self._error(400, 111, "Missing TTL header")
        if not re.fullmatch(r"\d{1,10}", ttl.strip(), re.ASCII):
            return self._error(400, 112, "Invalid TTL header value")
        urgency = request.headers.get("urgency")
        if urgency is not None and urgency.strip().lower() not in self.urgencies:
            return self._error(400, 114, "Invalid Urgency header: one of very-low, low, normal, high")
        topic = request.headers.get("topic")
        if topic is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,32}", topic):
            return self._error(400, 113, "Topic must be at most 32 base64url characters")
        quota = self.vendors._take(self.name, received.destination)
        if quota is not None and quota.retry_after:
            return self._error(429, 999, "Too many requests", {"Retry-After": _whole_seconds(quota.retry_after)})
        if len(request.body) > self.max_body:
            return self._error(413, 104, f"Data payload must be at most {self.max_body} bytes")
        if request.body:
            encoding = request.headers.get("content-encoding", "").strip().lower()
            if not encoding:
                return self._error(400, 110, "Missing Content-Encoding header")
            if encoding != "aes128gcm":
                return self._error(415, 110, f"Unsupported Content-Encoding {encoding}: only aes128gcm")
            if received.plaintext is None:
                return self._error(400, 110, "The payload could not be decrypted as one aes128gcm record")
        headers = {"Location": f"{self.vendors.base_url}/push/m/{uuid.uuid4().hex}", "TTL": str(int(ttl))}
        return _Reply(201, b"", headers, accept=True)

    def vapid_problem(self, header: str, subscription: _Subscription) -> tuple[int, str] | None:
        """(status, message) if ``Authorization: vapid t=<jwt>,k=<key>`` is missing or wrong (RFC 8292)."""
        scheme, _, params = header.strip().partition(" ")
        if scheme.lower() != "vapid":
            return 401, "Missing or unsupported Authorization: use vapid t=<JWT>,k=<key>"
        fields = {}
        for part in params.split(","):
            name, _, value = part.strip().partition("=")
            fields[name.strip().lower()] = value.strip()
        try:
            key = _unb64(fields.get("k", ""))
            public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), key)
            head, body, signature = fields.get("t", "").split(".")
            jose, claims, raw = json.loads(_unb64(head)), json.loads(_unb64(body)), _unb64(signature)
            if not isinstance(jose, dict) or jose.get("alg") != "ES256" or not isinstance(claims, dict):
                return 401, "The VAPID token must be an ES256 JWT"
            if len(raw) != 64:
                raise InvalidSignature
            der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
            public.verify(der, f"{head}.{body}".encode(), ec.ECDSA(hashes.SHA256()))
        except (ValueError, InvalidSignature):
            return 401, "The VAPID token does not verify against its key"
        if subscription.server_key is not None and key != subscription.server_key:
            return 403, "The VAPID key is not the applicationServerKey the subscription was made with"
        now, exp, sub = time.time(), claims.get("exp"), claims.get("sub")
        if claims.get("aud") != self.vendors.base_url:
            return 401, f"The VAPID aud claim must be {self.vendors.base_url}"
        if not isinstance(exp, int | float) or isinstance(exp, bool) or exp <= now:
            return 401, "The VAPID exp claim is missing or in the past"
        if exp > now + 24 * 3600:
            return 401, "The VAPID exp claim is more than 24 hours ahead"
        if not isinstance(sub, str) or not sub.startswith(("mailto:", "https:")):
            return 401, "The VAPID sub claim must be a mailto: or https: URL"
        return None


def _decrypt(body: bytes, subscription: _Subscription) -> bytes | None:
    """The plaintext of an RFC 8291 message: one aes128gcm record keyed by the sender's public key, or None."""
    if len(body) < 86 + 17 or body[20] != 65 or len(body) - 86 > int.from_bytes(body[16:20], "big"):
        return None
    try:
        return http_ece.decrypt(body, private_key=subscription.key, auth_secret=subscription.auth, version="aes128gcm")
    except (http_ece.ECEException, InvalidTag, ValueError):
        return None


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, vendors: Vendors) -> None:
        self.vendors = vendors
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hang up early (timeouts, hangs) are the point


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # an idle keep-alive connection does not outlive a test
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.vendors._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.vendors._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the name http.server uses
        pass

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except OSError:
            self.close_connection = True

    def do_POST(self) -> None:
        try:
            body = self._body()
        except ValueError:
            self.send_error(400, "bad body framing")
            return
        parts = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = self.server.vendors._serve(_Request(self.command, parts.path, query, headers, body))
        if reply is None:
            self._hang()
            return
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.status not in (204, 304):
            self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if self.command != "HEAD" and reply.status not in (204, 304):
            self.wfile.write(reply.body)

    do_GET = do_HEAD = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_POST  # noqa: N815 - http.server's names

    def _body(self) -> bytes:
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length > 0 else b""
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0], 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass  # trailers
        return b"".join(chunks)

    def _hang(self) -> None:
        """Answer nothing until the client hangs up or the fakes close."""
        self.close_connection = True
        while not self.server.vendors._closing.wait(0.05):
            readable, _, _ = select.select([self.connection], [], [], 0)
            try:
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    return
            except OSError:
                return


class _QuietLogin(logging.Filter):
    """Drop aiosmtpd's own deprecation warning about Session.login_data, logged on every successful AUTH."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "login_data is deprecated" not in record.getMessage()


logging.getLogger("mail.log").addFilter(_QuietLogin())


class _SMTPController(Controller):
    """A Controller that may listen on port 0: it reads the port it got before its first connection."""

    def _trigger_server(self) -> None:
        assert isinstance(self.server, asyncio.Server)
        self.port = self.server.sockets[0].getsockname()[1]
        super()._trigger_server()


class _SMTPHandler:
    def __init__(self, vendors: Vendors) -> None:
        self.vendors = vendors

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:  # noqa: N802 - aiosmtpd's
        answer = self.vendors._mail(session, envelope)
        if isinstance(answer, Hang):
            await asyncio.get_running_loop().run_in_executor(None, self.vendors._closing.wait)
            return "421 4.3.2 Service shutting down"
        return answer


class Vendors:
    """Fake Resend, Twilio, Slack, Discord, Teams, webhook receiver, Web Push and SMTP servers; a context manager.

    One ThreadingHTTPServer (127.0.0.1, a free port) serves the HTTP vendors under path prefixes, one aiosmtpd server
    (127.0.0.1, a free port, known after `start`) takes mail. `close` stops both promptly, even during a `Hang`.
    """

    resend_key = "re_test_123456789"
    twilio_sid = "AC" + "0123456789abcdef" * 2
    twilio_token = "fedcba9876543210" * 2
    twilio_from = "+15005550006"
    smtp_user = "pulse"
    smtp_password = "secret"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._closing = threading.Event()
        self._attempts: dict[str, list[Received]] = {vendor: [] for vendor in VENDORS}
        self._received: dict[str, list[Received]] = {vendor: [] for vendor in VENDORS}
        self._scripts: dict[str, deque[Answer]] = {vendor: deque() for vendor in VENDORS}
        self._limits = dict(DEFAULT_LIMITS)
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._connections: set[socket.socket] = set()
        self._resend, self._twilio, self._slack = _Resend(self), _Twilio(self), _Slack(self)
        self._discord, self._teams = _Discord(self), _Teams(self)
        self._webhook, self._push = _Webhook(self), _Push(self)
        fakes = (self._resend, self._twilio, self._slack, self._discord, self._teams, self._webhook, self._push)
        self._fakes: dict[str, _Fake] = {fake.name: fake for fake in fakes}
        self._server = _Server(self)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,), name="vendors", daemon=True)
        self.smtp_host = "127.0.0.1"
        self.smtp_port = 0
        self._smtp = _SMTPController(
            _SMTPHandler(self),
            hostname=self.smtp_host,
            port=0,
            authenticator=self._authenticate,
            auth_require_tls=False,
        )
        self._smtp_running = False

    # URLs to give Pulse

    def resend_url(self) -> str:
        """The Resend API base: Pulse POSTs ``{resend_url}/emails``."""
        return f"{self.base_url}/resend"

    def twilio_url(self) -> str:
        """The Twilio API base: Pulse POSTs ``{twilio_url}/2010-04-01/Accounts/{sid}/Messages.json``."""
        return f"{self.base_url}/twilio"

    def slack_hook(self) -> str:
        """Register a new Slack incoming webhook and return its URL."""
        with self._lock:
            return self._slack.register()

    def discord_hook(self) -> str:
        """Register a new Discord webhook and return its URL (add ``?wait=true`` for a 200 and the message)."""
        with self._lock:
            return self._discord.register()

    def teams_workflow(self) -> str:
        """Register a new Teams (Power Automate) workflow and return its trigger URL, ``sig`` included."""
        with self._lock:
            return self._teams.register()

    def webhook_receiver(self, secret: str | None = None) -> str:
        """Register a generic webhook receiver; with a ``secret`` it requires Pulse's X-Pulse-* signature headers."""
        with self._lock:
            return self._webhook.register(secret)

    def push_subscription(self, application_server_key: str | None = None) -> dict[str, Any]:
        """A new PushSubscription JSON (real P-256 key and auth secret; the fake keeps the private key to decrypt).

        With ``application_server_key`` (base64url VAPID public key), a push signed by another key gets 403.
        """
        with self._lock:
            return self._push.register(application_server_key)

    def unsubscribe(self, subscription: Mapping[str, Any], status: int = 410) -> None:
        """From now on the push service answers ``status`` (404 or 410) for this subscription."""
        sub_id = str(subscription["endpoint"]).rsplit("/", 1)[-1]
        with self._lock:
            self._push.subscriptions[sub_id].gone = status

    # What arrived

    def received(self, vendor: str) -> list[Received]:
        """The accepted (2xx) deliveries to ``vendor``, in order; an idempotent repeat is not a new delivery."""
        with self._lock:
            return list(self._received[self._known(vendor)])

    def attempts(self, vendor: str) -> list[Received]:
        """Every request that reached ``vendor``, accepted or not, in order."""
        with self._lock:
            return list(self._attempts[self._known(vendor)])

    def wait_received(self, vendor: str, count: int, timeout: float = 30) -> list[Received]:
        """Wait until ``vendor`` accepted at least ``count`` deliveries; return them all."""
        self._known(vendor)
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._received[vendor]) >= count, timeout):
                got, tried = len(self._received[vendor]), len(self._attempts[vendor])
                raise AssertionError(
                    f"timed out after {timeout} s waiting for {count} {vendor} deliveries: "
                    f"{got} accepted of {tried} attempts"
                )
            return list(self._received[vendor])

    # What the fakes do

    def script(self, vendor: str, *answers: Answer) -> None:
        """Answer the next ``len(answers)`` requests to ``vendor`` with these instead (they still count as attempts)."""
        with self._lock:
            self._scripts[self._known(vendor)].extend(answers)

    def limit(self, vendor: str, per_second: float, burst: int) -> None:
        """Rate-limit ``vendor`` per destination to ``per_second`` with bursts of ``burst``; 0 per second: no limit."""
        with self._lock:
            self._limits[self._known(vendor)] = (per_second, max(1, burst)) if per_second > 0 else (0.0, 0)
            for key in [key for key in self._buckets if key[0] == vendor]:
                del self._buckets[key]

    # Life cycle

    def start(self) -> Vendors:
        self._thread.start()
        self._smtp.start()
        self._smtp_running = True
        self.smtp_port = self._smtp.port
        return self

    def close(self) -> None:
        """Stop both servers; hung requests end and open connections are shut."""
        self._closing.set()
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._smtp_running:
            self._smtp_running = False
            self._smtp.stop()

    def __enter__(self) -> Vendors:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    # Internals

    def _known(self, vendor: str) -> str:
        if vendor not in self._attempts:
            raise ValueError(f"unknown vendor {vendor!r}: one of {', '.join(VENDORS)}")
        return vendor

    def _track(self, connection: socket.socket, open_: bool) -> None:
        with self._lock:
            if open_:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _take(self, vendor: str, destination: str) -> _Quota | None:
        """Take a token from ``vendor``'s bucket for ``destination``; None when the vendor has no limit."""
        with self._lock:
            rate, burst = self._limits[vendor]
            if rate <= 0:
                return None
            now = time.monotonic()
            bucket = self._buckets.setdefault((vendor, destination), _Bucket(rate, burst, burst, now))
            wait = bucket.take(now)
            return _Quota(burst, int(bucket.tokens), (burst - bucket.tokens) / rate, wait)

    def _record(self, received: Received) -> Answer | None:
        """Record an attempt; return the scripted answer for it, if any."""
        with self._changed:
            self._attempts[received.vendor].append(received)
            script = self._scripts[received.vendor]
            answer = script.popleft() if script else None
            self._changed.notify_all()
        return answer

    def _accept(self, received: Received) -> None:
        with self._changed:
            self._received[received.vendor].append(received)
            self._changed.notify_all()

    def _serve(self, request: _Request) -> _Reply | None:
        """The answer to an HTTP request, or None to hang."""
        fake = self._fakes.get(request.path.split("/")[1] if request.path.startswith("/") else "")
        if fake is None:
            return _text_reply(404, "not found")
        received = fake.parse(request)
        answer = self._record(received)
        if isinstance(answer, Hang):
            return None
        if isinstance(answer, Fail):
            return fake.fail(answer)
        reply = fake.handle(request, received)
        if reply.accept:
            self._accept(received)
        return reply

    def _authenticate(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
    ) -> AuthResult:
        expected = (self.smtp_user.encode(), self.smtp_password.encode())
        ok = isinstance(auth_data, LoginPassword) and tuple(auth_data) == expected
        return AuthResult(success=ok, handled=False, auth_data=auth_data if ok else None)  # a failure answers 535

    def _mail(self, session: Session, envelope: Envelope) -> str | Hang:
        """The SMTP reply to a message's DATA, or Hang."""
        content = envelope.original_content or cast(bytes, envelope.content)
        message = cast(EmailMessage, email.message_from_bytes(content, policy=email.policy.default))
        login = session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else ""
        received = Received(
            "smtp",
            "DATA",
            envelope.mail_from or "",
            {"auth": login} if login else {},
            {name.lower(): str(value) for name, value in message.items()},
            content,
            email=message,
            destination=",".join(envelope.rcpt_tos),
        )
        answer = self._record(received)
        if isinstance(answer, Hang):
            return answer
        if isinstance(answer, Fail):
            default = "4.3.0 Try again later" if answer.status < 500 else "5.0.0 Rejected"
            text = answer.body.decode() if answer.body else default
            return f"{answer.status} {text}"
        quota = self._take("smtp", received.destination)
        if quota is not None and quota.retry_after:
            return "451 4.7.1 Rate limit exceeded, try again later"
        self._accept(received)
        return f"250 2.0.0 OK: queued as {secrets.token_hex(6).upper()}"
