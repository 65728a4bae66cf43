"""What every channel shares: where a notification goes (`Destination`), what the provider said
(`Sent`, `TransportError`), what a kind of channel is (`Channel`), and `post`, the one way a
channel sends, through `pulse.net.api.call`.

So a destination URL taken from a configuration file (webhooks, Slack, Discord, Teams, push
endpoints) is held to the same address policy as an uptime check, and error texts name the host,
never the URL (whose path is often the secret). Whatever the provider answers, an error or a 2xx,
a channel sees it only through readers whose texts `post` quotes (`pulse.net.api.quote`): the
request's secrets redacted, one line of at most 300 characters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pulse
from pulse.net import AddressPolicy, Request, Response
from pulse.net.api import ApiError, bounded, call, json_body, json_field, quote

__all__ = ["JSON", "Channel", "Destination", "Sent", "TransportError", "field", "json_field", "post"]

if TYPE_CHECKING:
    from pulse.config import Settings
    from pulse.notifications.channels.notice import Notice

USER_AGENT = f"Pulse/{pulse.__version__} (notifications)"
JSON = {"Content-Type": "application/json; charset=utf-8"}


class TransportError(ApiError):
    """A delivery failed. The text is the provider's reason, without secrets.

    Parameters:
      permanent: no retry will help (a 400, 401, 403, 404...): fail the notification now.
      retry_after: the provider rate-limited us; seconds to wait, not counted as a failure.
      gone: the destination no longer exists (a push subscription answered 404 or 410).
    """

    def __init__(
        self, message: str, *, permanent: bool = False, retry_after: float | None = None, gone: bool = False
    ) -> None:
        super().__init__(message, permanent=permanent or gone, retry_after=retry_after)
        self.gone = gone


@dataclasses.dataclass(frozen=True)
class Destination:
    """Where one notification goes.

    Parameters:
      kind: the channel's kind, a key of `pulse.notifications.channels.CHANNELS`.
      settings: the channel's settings (url, to, secret, endpoint, keys...), secrets included.
      delivery_id: stable across every attempt of this notification (idempotency keys, dedupe).
      key: the channel, subscriber or paged person ("c12", "s34", "p56"), for pacing.
    """

    kind: str
    settings: Mapping[str, Any]
    delivery_id: str
    key: str


@dataclasses.dataclass(frozen=True)
class Sent:
    """A delivery the provider accepted.

    Parameters:
      reference: the provider's id for the message, when it gives one, as `pulse.net.api.quote` gives it.
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
      deduplicated: a repeat of a delivery is dropped by its id (``Destination.delivery_id``), by
        the provider or by the receiver: sending it twice is harmless, so a batch may record it
        with the others at its end; one of a kind without is recorded as soon as it is sent.
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
    deduplicated: bool = False

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
    reference: Callable[[Response], object] | None = None,
    pause: Callable[[Response], float] | None = None,
) -> Sent:
    """POST ``body`` to ``url``; return what the 2xx answer said as `Sent`, or raise `TransportError`.

    The connection is kept alive for the thread's next delivery to the same origin, where the
    provider allows it (`pulse.net.keepalive`: every Slack, Discord or Teams hook, push service and
    provider API is one origin; a broadcast to subscribers' webhooks on one host is too), and
    dialled under ``policy`` like a fresh one. Sending a delivery twice is no worse than a retry:
    only when the server closes a kept connection as the request goes out, before any answer, is
    it sent once more on a fresh connection.

    Parameters:
      vendor: the provider's name, for error texts ("Slack").
      timeout_s: seconds for the whole exchange: connecting, sending, reading the answer
        (`Settings.notify_timeout_s`).
      reason: reads the provider's error reason from a non-2xx answer (default: the body's text).
      reference: reads the provider's id for the message from the 2xx answer, None or "" when it
        gave none (default: none), e.g. `field`; quoted.
      pause: reads the seconds the provider asks to leave before the next message to the same
        destination from the 2xx answer (default: none); `bounded` like every wait a provider asks for.
    """
    request = Request("POST", url, {"User-Agent": USER_AGENT, **headers}, body, timeout_s, keep_alive=True)
    try:
        response = call(request, policy, vendor=vendor, reason=reason)
    except ApiError as e:
        gone = e.status in (404, 410) and vendor == "Web Push"
        raise TransportError(str(e), permanent=e.permanent, retry_after=e.retry_after, gone=gone) from None
    said = reference(response) if reference else None
    return Sent(
        reference="" if said is None or said == "" else quote(request, said),
        pause_s=bounded(pause(response)) if pause else 0.0,
    )


def field(name: str) -> Callable[[Response], object]:
    """A `post` ``reference`` reader: the member ``name`` of a JSON object answered, else None."""

    def read(response: Response) -> object:
        data = json_body(response)
        return data.get(name) if isinstance(data, dict) else None

    return read
