"""Calling a provider's HTTP API through the one outbound seam (`pulse.net.fetch`), its answer
sorted into success, worth retrying, rate limited, or permanently refused: notifications (Slack,
Resend, Twilio...) and metrics integrations (Prometheus, Datadog...) alike.

Error texts name the provider and its reason, never the URL (whose path is often a secret) nor
anything of the request's secrets the provider repeats: whatever a provider says, in a 2xx answer
or any other, becomes text only through `quote`. Its JSON is read with `json_body`, which a body
nested without end or holding a number too large for a float cannot crash, and every wait it asks
for is `bounded`.
"""

from __future__ import annotations

import base64
import binascii
import email.utils
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from pulse.errors import PulseError
from pulse.net.exchange import Request, fetch
from pulse.net.policy import AddressPolicy
from pulse.net.response import Response

MAX_RETRY_AFTER_S = 20 * 60.0
"""A provider's Retry-After is honoured up to this (a delayed message waits in worker memory)."""
_CREDENTIAL = re.compile(r"auth|key|token|secret|signature|password", re.IGNORECASE)
_SECRET_MIN = 8  # characters: shorter parts of a URL (/api, /v1) are words, not secrets
MAX_DEPTH = 64
"""Levels of nesting a provider's JSON may have: no API Pulse calls nests a tenth as deep."""
_DIGITS = 308  # an integer of more digits may not fit a float: it is read as one (an infinity)
_LONG_NUMBER = re.compile(rb"\d{%d}" % (_DIGITS + 1))
# Statuses worth another attempt besides 5xx: timeout, conflict (e.g. Resend's concurrent idempotent requests).
_TRANSIENT = frozenset({408, 409, 425})


class ApiError(PulseError):
    """A call failed. The text is the provider's reason, without secrets.

    Parameters:
      permanent: no retry will help (a 400, 401, 403, 404...).
      retry_after: the provider rate-limited us; seconds to wait, not counted as a failure.
      status: the HTTP status, when there was an answer.
    """

    def __init__(
        self, message: str, *, permanent: bool = False, retry_after: float | None = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.retry_after = retry_after
        self.status = status


def call(
    request: Request,
    policy: AddressPolicy,
    *,
    vendor: str,
    reason: Callable[[Response], str] | None = None,
    wait: Callable[[Response], float] | None = None,
    judge: Callable[[Response], int] | None = None,
) -> Response:
    """Make ``request``; return the 2xx `Response` or raise `ApiError`.

    Parameters:
      vendor: the provider's name, for error texts ("Slack").
      reason: reads the provider's error reason from a non-2xx answer (default: the body's text).
      wait: reads the seconds to wait from a 429 (default: `retry_after`).
      judge: reads the status a non-2xx answer is judged by, permanent or worth retrying, when the
        provider says more in its body than in its HTTP status (default: the HTTP status).
    """
    response, error = fetch(request, policy)
    if error is not None:
        raise ApiError(f"{vendor}: {error}")
    status = response.status or 0
    if 200 <= status < 300:
        return response
    why = quote(request, (reason or text)(response))
    described = f"{vendor} answered {status}" + (f": {why}" if why else "")
    if status == 429:
        raise ApiError(described, retry_after=(wait or retry_after)(response), status=status)
    verdict = judge(response) if judge else status
    if verdict >= 500 or verdict in _TRANSIENT:
        raise ApiError(described, status=status)
    raise ApiError(described, permanent=True, status=status)


def text(response: Response) -> str:
    return response.body.decode("utf-8", "replace")


def json_body(response: Response) -> Any:
    """The JSON value a provider answered, or None when the body is not JSON or is nested deeper
    than `MAX_DEPTH`. An integer too long for a float is read as a float (an infinity), so reading
    a number of the answer never overflows."""
    integer = _integer if _LONG_NUMBER.search(response.body) else None  # the hook costs: only when needed
    try:
        data = json.loads(response.body, parse_int=integer)
    except (ValueError, RecursionError):
        return None
    return data if _nesting(data) <= MAX_DEPTH else None


def _integer(digits: str) -> int | float:
    return int(digits) if len(digits) <= _DIGITS else float(digits)


def _nesting(data: Any) -> int:
    """How deeply ``data`` nests, up to one level past `MAX_DEPTH` (0 for a number or a string),
    counted level by level, without recursion."""
    depth, level = 0, [data]
    while depth <= MAX_DEPTH:
        level = [value for value in level if isinstance(value, dict | list)]
        if not level:
            break
        depth += 1
        level = [item for value in level for item in (value.values() if isinstance(value, dict) else value)]
    return depth


def json_field(*names: str) -> Callable[[Response], str]:
    """A `reason` reader: the first of ``names`` present in a JSON error body (dotted for nested)."""

    def read(response: Response) -> str:
        data = json_body(response)
        if data is None:
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
    Discord's more precise ``retry_after`` (float seconds in the JSON body) when present. Whatever
    the answer says, the wait is `bounded`."""
    seconds: float | None = None
    data = json_body(response) if response.body else None
    if isinstance(data, dict) and isinstance(data.get("retry_after"), int | float):
        seconds = float(data["retry_after"])
    header = response.headers.get("retry-after", "").strip()
    if seconds is None and header:
        try:
            seconds = float(header)
        except ValueError:
            try:
                parsed = email.utils.parsedate_to_datetime(header)
                seconds = parsed.timestamp() - (time.time() if now is None else now)
            except (ValueError, TypeError, OverflowError):  # "soon": not a date either
                seconds = None
    return bounded(seconds)


def bounded(seconds: float | None) -> float:
    """A wait a provider asked for, from 0 to `MAX_RETRY_AFTER_S`; 1 s when it said none or NaN."""
    if seconds is None or math.isnan(seconds):
        return 1.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def secrets(url: str, headers: Mapping[str, str]) -> list[str]:
    """What a request holds that a reply must not repeat: the URL's path and query and their long
    parts (a webhook's path is often its token), and every credential in its cleartext forms too:
    the URL's password, the values of credential headers and their credentials without the scheme
    (``Bearer``), a Basic pair decoded (``user:password``) and its password; as sent and
    percent-decoded. Credentials count whatever their length, the URL's parts from 8 characters."""
    found, credentials = [], []
    try:
        parts = urlsplit(url)
        found += [parts.path, parts.query, *parts.path.split("/"), *(value for _, value in parse_qsl(parts.query))]
        credentials.append(parts.password or "")
    except ValueError:
        pass
    for name, value in headers.items():
        if _CREDENTIAL.search(name):
            credentials += [value, *_cleartext(value)]
    found += [unquote(value) for value in found]
    credentials += [unquote(value) for value in credentials]
    kept = {value for value in found if len(value) >= _SECRET_MIN} | {value for value in credentials if value}
    return sorted(kept, key=len, reverse=True)


def _cleartext(value: str) -> list[str]:
    """The cleartext forms of a credential header's value: its credentials without the scheme and,
    for Basic (RFC 7617), the decoded ``user:password`` and the password."""
    scheme, _, credentials = value.strip().partition(" ")
    credentials = credentials.strip()
    if not credentials:
        return []
    if scheme.lower() != "basic":
        return [credentials]
    try:
        raw = base64.b64decode(credentials, validate=True)
    except binascii.Error:
        return [credentials]
    pairs = {raw.decode("latin-1"), raw.decode("utf-8", "replace")}  # as RFC 7617 allows, or as Pulse sends
    return [credentials, *pairs, *(pair.partition(":")[2] for pair in pairs)]


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every one of ``secrets`` replaced by ``***`` (the longest first)."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def quote(request: Request, said: object) -> str:
    """What a provider said in answer to ``request`` (any text or JSON value of its answer, whatever
    its status), for an error text, a note or a listing: one line of at most 300 characters,
    without the request's secrets. Every text of a provider goes through here."""
    return _clean(redact(str(said), secrets(request.url, request.headers)))


def _clean(reason: str, limit: int = 300) -> str:
    """One short line of the provider's reason."""
    line = " ".join(reason.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
