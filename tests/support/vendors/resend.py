"""The fake Resend: ``POST /resend/emails`` with ``Authorization: Bearer <key>``.

Resend's documentation: "Send Email" (https://resend.com/docs/api-reference/emails/send-email), "Idempotency Keys"
(https://resend.com/docs/dashboard/emails/idempotency-keys), "Errors" (https://resend.com/docs/api-reference/errors)
and the rate limit of 2 requests a second per team (https://resend.com/docs/api-reference/introduction#rate-limit).

It checks the key (401 missing, 403 invalid), the required fields and address formats, at most 50 recipients and the
Idempotency-Key (the same key and body answer the first email's id again; another body, 409), and answers Resend's
``{"statusCode", "name", "message"}`` errors and its ``ratelimit-*`` headers.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tests.support.vendors.base import Fake, Received, Reply, Request, json_reply, whole_seconds

if TYPE_CHECKING:
    from tests.support.vendors.facade import Vendors


class Resend(Fake):
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

    def error(self, status: int, message: str, retry_after: float | None = None) -> Reply:
        name = self.names.get(status, "application_error" if status >= 500 else "validation_error")
        return self._error(status, name, message)

    def _error(self, status: int, name: str, message: str, headers: Mapping[str, str] | None = None) -> Reply:
        return json_reply(status, {"statusCode": status, "name": name, "message": message}, headers)

    def handle(self, request: Request, received: Received) -> Reply:
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
                headers["retry-after"] = whole_seconds(quota.retry_after)
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
                return json_reply(200, {"id": email_id}, headers)  # the first answer, not a second email
            problem = _resend_problem(payload)
            if problem is not None:
                return self._error(422, *problem, headers)
            email_id = str(uuid.uuid4())
            if idempotency is not None:
                self.keys[idempotency] = (payload, email_id)
        return json_reply(200, {"id": email_id}, headers, accept=True)


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
