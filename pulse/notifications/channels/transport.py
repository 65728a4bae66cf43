"""The one seam every channel sends through: a POST with an explicit deadline, its answer sorted
into sent, worth retrying, rate limited, or permanently refused.

Requests go through `pulse.net.fetch`, so a destination URL taken from a configuration file
(webhooks, Slack, Discord, Teams, push endpoints) is held to the same address policy as an uptime
check, and error texts name the host, never the URL (whose path is often the secret).
"""

from __future__ import annotations

import dataclasses
import email.utils
import json
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

import pulse
from pulse.errors import PulseError
from pulse.net import AddressPolicy, Request, Response, fetch

if TYPE_CHECKING:
    from pulse.config import Settings
    from pulse.notifications.channels.notice import Notice

MAX_RETRY_AFTER_S = 20 * 60.0
"""A provider's Retry-After is honoured up to this (a delayed message waits in worker memory)."""
USER_AGENT = f"Pulse/{pulse.__version__} (notifications)"
JSON = {"Content-Type": "application/json; charset=utf-8"}
_CREDENTIAL = re.compile(r"auth|key|token|secret|signature|password", re.IGNORECASE)
_SECRET_MIN = 8  # characters: shorter parts of a URL (/api, /v1) are words, not secrets
# Statuses worth another attempt besides 5xx: timeout, conflict (e.g. Resend's concurrent idempotent requests).
_TRANSIENT = frozenset({408, 409, 425})


class TransportError(PulseError):
    """A delivery failed. The text is the provider's reason, without secrets.

    Parameters:
      permanent: no retry will help (a 400, 401, 403, 404...): fail the notification now.
      retry_after: the provider rate-limited us; seconds to wait, not counted as a failure.
      gone: the destination no longer exists (a push subscription answered 404 or 410).
    """

    def __init__(
        self, message: str, *, permanent: bool = False, retry_after: float | None = None, gone: bool = False
    ) -> None:
        super().__init__(message)
        self.permanent = permanent or gone
        self.retry_after = retry_after
        self.gone = gone


@dataclasses.dataclass(frozen=True)
class Destination:
    """Where one notification goes.

    Parameters:
      kind: the channel's kind, a key of `pulse.notifications.channels.CHANNELS`.
      settings: the channel's settings (url, to, secret, endpoint, keys...), secrets included.
      delivery_id: stable across every attempt of this notification (idempotency keys, dedupe).
      key: the channel or subscriber ("c12", "s34"), for pacing.
    """

    kind: str
    settings: Mapping[str, Any]
    delivery_id: str
    key: str


@dataclasses.dataclass(frozen=True)
class Sent:
    """A delivery the provider accepted.

    Parameters:
      reference: the provider's id for the message, when it gives one.
      pause_s: seconds the provider asks us to leave before the next message to the same destination.
    """

    reference: str = ""
    pause_s: float = 0.0


@dataclasses.dataclass(frozen=True)
class Channel:
    """One kind of channel, everything Pulse knows of it, written once in the channel's module:
    `pulse.notifications.channels.CHANNELS` derives the configuration file's choices, the pacing
    and the listings from these.

    Parameters:
      kind: its type in the configuration file and the database ("slack").
      label: how messages name it ("Slack").
      deliver: ``deliver(notice, destination, settings, policy)`` sends one notice and returns
        `Sent`, or raises `TransportError`.
      fields: the settings a channel of this kind takes in the configuration file.
      optional: those of ``fields`` that may be left out.
      subscriber: the subscriber field whose address it delivers to ("email", "phone",
        "webhook", "push"), or None when only channels use it.
      address: the setting a subscriber's address fills ("to", "url", "endpoint").
      pace: seconds between two messages to one destination (the provider's limit and 10 % to
        spare, shared by every worker), or None.
      account_pace: for a limit on the whole account rather than per destination: given the
        settings, its key and spacing in seconds, or None.
    """

    kind: str
    label: str
    deliver: Callable[[Notice, Destination, Settings, AddressPolicy], Sent]
    fields: tuple[str, ...]
    optional: tuple[str, ...] = ()
    subscriber: str | None = None
    address: str = "url"
    pace: float | None = None
    account_pace: Callable[[Settings], tuple[str, float] | None] | None = None

    def pacing(self, destination: Destination, settings: Settings) -> tuple[str, float] | None:
        """The pacing key and spacing (seconds) of ``destination``, if it has a limit."""
        if self.account_pace is not None:
            return self.account_pace(settings)
        return None if self.pace is None else (f"{self.kind}:{destination.key}", self.pace)

    @property
    def address_is_url(self) -> bool:
        """A subscriber's address is a URL: listings show its host only (its path may be a secret)."""
        return self.address in ("url", "endpoint")


def post(
    url: str,
    body: str | bytes,
    headers: Mapping[str, str],
    policy: AddressPolicy,
    *,
    vendor: str,
    timeout_s: float,
    reason: Callable[[Response], str] | None = None,
) -> Response:
    """POST ``body`` to ``url``; return the 2xx `Response` or raise `TransportError`.

    Parameters:
      vendor: the provider's name, for error texts ("Slack").
      timeout_s: seconds for the whole exchange: connecting, sending, reading the answer
        (`Settings.notify_timeout`).
      reason: reads the provider's error reason from a non-2xx answer (default: the body's text).
    """
    request = Request("POST", url, {"User-Agent": USER_AGENT, **headers}, body, timeout_s)
    response, error = fetch(request, policy)
    if error is not None:
        raise TransportError(f"{vendor}: {error}")
    status = response.status or 0
    if 200 <= status < 300:
        return response
    why = _clean(redact((reason or text)(response), secrets(url, headers)))
    described = f"{vendor} answered {status}" + (f": {why}" if why else "")
    if status == 429:
        raise TransportError(described, retry_after=retry_after(response))
    if status >= 500 or status in _TRANSIENT:
        raise TransportError(described)
    raise TransportError(described, permanent=True, gone=status in (404, 410) and vendor == "Web Push")


def text(response: Response) -> str:
    return response.body.decode("utf-8", "replace")


def json_field(*names: str) -> Callable[[Response], str]:
    """A `reason` reader: the first of ``names`` present in a JSON error body (dotted for nested)."""

    def read(response: Response) -> str:
        try:
            data: Any = json.loads(response.body)
        except ValueError:
            return text(response)
        for name in names:
            value = data
            for part in name.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if value not in (None, ""):
                return str(value)
        return text(response)

    return read


def retry_after(response: Response, now: float | None = None) -> float:
    """Seconds the provider asks us to wait: Retry-After in seconds or as an HTTP date, else 1 s;
    Discord's more precise ``retry_after`` (float seconds in the JSON body) when present."""
    seconds: float | None = None
    try:
        data = json.loads(response.body) if response.body else None
        if isinstance(data, dict) and isinstance(data.get("retry_after"), int | float):
            seconds = float(data["retry_after"])
    except ValueError:
        pass
    header = response.headers.get("retry-after", "").strip()
    if seconds is None and header:
        try:
            seconds = float(header)
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(header) if header else None
            if parsed is not None:
                seconds = parsed.timestamp() - (time.time() if now is None else now)
    if seconds is None or seconds != seconds:  # absent or NaN
        seconds = 1.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def secrets(url: str, headers: Mapping[str, str]) -> list[str]:
    """What a request holds that a reply must not repeat: the URL's path and query and their long
    parts (a webhook's path is often its token), its password, and the values of credential headers,
    as sent and percent-decoded."""
    found = []
    try:
        parts = urlsplit(url)
        found += [parts.path, parts.query, parts.password or ""]
        found += parts.path.split("/") + [value for _, value in parse_qsl(parts.query)]
    except ValueError:
        pass
    for name, value in headers.items():
        if _CREDENTIAL.search(name):
            found += [value, *value.split()]
    decoded = [unquote(value) for value in found]
    return sorted({value for value in found + decoded if len(value) >= _SECRET_MIN}, key=len, reverse=True)


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every one of ``secrets`` replaced by ``***`` (the longest first)."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def _clean(reason: str, limit: int = 300) -> str:
    """One short line of the provider's reason."""
    line = " ".join(reason.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
