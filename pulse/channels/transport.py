"""The one seam every channel sends through: a POST with an explicit deadline, its answer sorted
into sent, worth retrying, rate limited, or permanently refused.

Requests go through `pulse.http.fetch`, so a destination URL taken from a configuration file
(webhooks, Slack, Discord, Teams, push endpoints) is held to the same address policy as an uptime
check, and error texts name the host, never the URL (whose path is often the secret).
"""

from __future__ import annotations

import dataclasses
import email.utils
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import pulse
from pulse.conditions import Response
from pulse.config import get_settings
from pulse.errors import PulseError
from pulse.http import AddressPolicy, Target, fetch

TIMEOUT_S: float | None = None
"""Seconds for one delivery (connecting, sending, reading the answer); None: PULSE_NOTIFY_TIMEOUT."""
MAX_RETRY_AFTER_S = 20 * 60.0
"""A provider's Retry-After is honoured up to this (a delayed message waits in worker memory)."""
USER_AGENT = f"Pulse/{pulse.__version__} (notifications)"
JSON = {"Content-Type": "application/json; charset=utf-8"}
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
      kind: the channel type (email, sms, slack, discord, teams, webhook, push).
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


def post(
    url: str,
    body: str | bytes,
    headers: Mapping[str, str],
    policy: AddressPolicy,
    *,
    vendor: str,
    reason: Callable[[Response], str] | None = None,
    timeout_s: float | None = None,
) -> Response:
    """POST ``body`` to ``url``; return the 2xx `Response` or raise `TransportError`.

    Parameters:
      vendor: the provider's name, for error texts ("Slack").
      reason: reads the provider's error reason from a non-2xx answer (default: the body's text).
      timeout_s: seconds for the whole exchange (default `timeout`).
    """
    target = Target("POST", url, {"User-Agent": USER_AGENT, **headers}, body, timeout_s or timeout())
    response, error = fetch(target, policy)
    if error is not None:
        raise TransportError(f"{vendor}: {error}")
    status = response.status or 0
    if 200 <= status < 300:
        return response
    why = _clean((reason or text)(response))
    described = f"{vendor} answered {status}" + (f": {why}" if why else "")
    if status == 429:
        raise TransportError(described, retry_after=retry_after(response))
    if status >= 500 or status in _TRANSIENT:
        raise TransportError(described)
    raise TransportError(described, permanent=True, gone=status in (404, 410) and vendor == "Web Push")


def timeout() -> float:
    """Seconds a delivery may take: `TIMEOUT_S`, else the PULSE_NOTIFY_TIMEOUT setting."""
    return TIMEOUT_S or float(get_settings().notify_timeout)


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


def _clean(reason: str, limit: int = 300) -> str:
    """One short line of the provider's reason."""
    line = " ".join(reason.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
