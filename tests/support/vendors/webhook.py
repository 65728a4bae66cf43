"""The fake generic webhook receiver: ``POST /webhook/{name}``, any JSON.

No vendor: it receives Pulse's own webhooks, as `pulse.notifications.channels.webhook` documents them. A receiver
registered with a secret checks the X-Pulse-Delivery, X-Pulse-Timestamp (within 5 minutes of now) and
X-Pulse-Signature (``v1=`` HMAC-SHA256 of ``"<timestamp>." + body``; any of several, for a rotation) headers.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from typing import TYPE_CHECKING

from tests.support.vendors.base import Fake, Received, Reply, Request, json_reply

if TYPE_CHECKING:
    from tests.support.vendors.facade import Vendors


class Webhook(Fake):
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

    def error(self, status: int, message: str, retry_after: float | None = None) -> Reply:
        return json_reply(status, {"ok": False, "error": message})

    def handle(self, request: Request, received: Received) -> Reply:
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
        return json_reply(200, {"ok": True}, accept=True)

    def signature_problem(self, request: Request, secret: str) -> str | None:
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
