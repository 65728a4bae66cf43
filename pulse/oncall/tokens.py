"""Acknowledgement tokens: what a page's link carries so that the person paged can acknowledge the
alert with one tap, and no one else, nothing else and not forever.

A token is ``<alert>.<person>.<expiry>.<signature>``: the alert's id, the person's key, the expiry
(epoch seconds) and an HMAC-SHA256 over those three with the secret key (``PULSE_ACK_SECRET``),
base64url without padding. `verify` recomputes the signature and compares it in constant time, so a
token for another alert or person, a changed expiry, or a token signed with another key is refused;
and so is one past its expiry.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from datetime import datetime, timedelta
from urllib.parse import quote

LIFETIME = timedelta(hours=24)  # a page's link works this long
MIN_SECRET = 32  # characters of PULSE_ACK_SECRET
_TOKEN = re.compile(r"([0-9]{1,19})\.([a-z0-9][a-z0-9_-]{0,63})\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})")


class InvalidTokenError(ValueError):
    """A token that acknowledges nothing; the message says why, without the token."""


def sign(alert_id: int, person: str, expires: datetime, secret: str) -> str:
    """The token that lets ``person`` (a key) acknowledge ``alert_id`` until ``expires``."""
    body = f"{alert_id}.{person}.{int(expires.timestamp())}"
    return f"{body}.{_signature(body, secret)}"


def verify(token: str, secret: str, now: datetime) -> tuple[int, str]:
    """The (alert id, person key) a token acknowledges for. Raises `InvalidTokenError`: malformed, not
    signed with ``secret``, or expired."""
    found = _TOKEN.fullmatch(token or "")
    if found is None:
        raise InvalidTokenError("the link is incomplete or malformed")
    alert_id, person, expires, signature = found.groups()
    if not hmac.compare_digest(signature, _signature(f"{alert_id}.{person}.{expires}", secret)):
        raise InvalidTokenError("the link's signature does not match: it was changed, or made with another key")
    if now.timestamp() >= int(expires):
        raise InvalidTokenError("the link has expired: acknowledge with `pulse oncall ack` or in the web application")
    return int(alert_id), person


def link(base: str, alert_id: int, person: str, paged: datetime, secret: str) -> str:
    """The acknowledgement link of a page made at ``paged``, working until `LIFETIME` after it:
    ``base`` (the endpoint, such as ``https://status.acme.example/ack``) with the token as ``?t=``.

    `pulse.oncall.alerts` makes it with the page and stores it on the page's notification rows,
    which the notifications worker sends as they are. That is as safe as the message itself: the
    link is a bearer credential the page carries anyway, for one alert, one person and a day, and
    the notification row holds no more than the SMS or email holds. The secret is never stored;
    notification listings do not show the link, and the queue's messages carry only row ids."""
    token = sign(alert_id, person, paged + LIFETIME, secret)
    return f"{base}{'&' if '?' in base else '?'}t={quote(token, safe='')}"


def _signature(body: str, secret: str) -> str:
    digest = hmac.new(secret.encode(), body.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
