"""The fake Web Push service: ``POST /push/{subscription}``, an encrypted message signed with VAPID.

The standards: RFC 8030, "Generic Event Delivery Using HTTP Push" (https://www.rfc-editor.org/rfc/rfc8030: TTL,
Urgency, Topic, 201 and Location), RFC 8291, "Message Encryption for Web Push" (https://www.rfc-editor.org/rfc/rfc8291:
one aes128gcm record) and RFC 8292, "Voluntary Application Server Identification (VAPID) for Web Push"
(https://www.rfc-editor.org/rfc/rfc8292); the error bodies and their ``errno`` are those of Mozilla's push service,
autopush ("Error Codes", https://mozilla-services.github.io/autopush-rs/errors.html).

Each subscription has a real P-256 key and auth secret: the fake decrypts what it receives into
``Received.plaintext``. It checks the VAPID JWT (ES256, ``aud``, ``exp`` within 24 hours, ``sub``) and, when the
subscription was made with one, the applicationServerKey; an unsubscribed subscription answers 404 or 410.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import secrets
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import http_ece
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from tests.support.vendors.base import Fake, Received, Reply, Request, json_reply, phrase, whole_seconds

if TYPE_CHECKING:
    from tests.support.vendors.facade import Vendors


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclasses.dataclass
class _Subscription:
    key: ec.EllipticCurvePrivateKey
    auth: bytes
    server_key: bytes | None  # the applicationServerKey it was made with, if any
    gone: int | None = None  # the status once unsubscribed


class Push(Fake):
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

    def parse(self, request: Request) -> Received:
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

    def error(self, status: int, message: str, retry_after: float | None = None) -> Reply:
        return self._error(status, self.errnos.get(status, 999), message)

    def _error(self, status: int, errno: int, message: str, headers: Mapping[str, str] | None = None) -> Reply:
        body = {
            "code": status,
            "errno": errno,
            "error": phrase(status),
            "message": message,
            "more_info": "http://autopush.readthedocs.io/en/latest/http.html#error-codes",
        }
        return json_reply(status, body, headers)

    def handle(self, request: Request, received: Received) -> Reply:
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
            return self._error(429, 999, "Too many requests", {"Retry-After": whole_seconds(quota.retry_after)})
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
        return Reply(201, b"", headers, accept=True)

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
