"""The fake Twilio: ``POST /twilio/2010-04-01/Accounts/{AccountSid}/Messages.json``, a form, HTTP Basic auth.

Twilio's documentation: "Create a Message resource"
(https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource) and its error codes
(https://www.twilio.com/docs/errors), which each error's ``more_info`` links to.

It checks the account sid and auth token, To (E.164), From (a number, short code or alphanumeric sender id) or a
MessagingServiceSid, a Body of at most 1,600 characters, counts the segments (GSM-7 or UCS-2), and answers the Message
resource (201) or Twilio's ``{"code", "message", "more_info", "status"}`` errors.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import email.utils
import math
import re
import secrets
import urllib.parse
from collections.abc import Mapping

from tests.support.vendors.base import Fake, Received, Reply, Request, json_reply

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


class Twilio(Fake):
    name = "twilio"
    route = re.compile(r"/twilio/2010-04-01/Accounts/([^/]+)/Messages\.json")

    def parse(self, request: Request) -> Received:
        received = super().parse(request)
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            return received
        form = dict(urllib.parse.parse_qsl(request.body.decode("utf-8", "replace"), keep_blank_values=True))
        return dataclasses.replace(received, json=None, form=form)

    def error(self, status: int, message: str, retry_after: float | None = None) -> Reply:
        code = {401: 20003, 405: 20004}.get(status, 20000 + status)
        return self._error(status, code, message)

    def _error(self, status: int, code: int, message: str, **extra: str) -> Reply:
        more_info = f"https://www.twilio.com/docs/errors/{code}"
        return json_reply(status, {"code": code, "message": message, "more_info": more_info, "status": status, **extra})

    def handle(self, request: Request, received: Received) -> Reply:
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
        return json_reply(201, message, accept=True)


def _basic_auth(headers: Mapping[str, str]) -> tuple[str, str] | None:
    scheme, _, encoded = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
    except ValueError:
        return None
    return user, password
