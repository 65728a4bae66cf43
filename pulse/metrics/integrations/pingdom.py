"""Pingdom: one uptime check's state, through the Pingdom API 3.1.

Pingdom's documentation: "Pingdom API 3.1" (https://docs.pingdom.com/api/), "Get detailed check
information" (``GET /checks/{checkid}``), its authentication (a Bearer API token) and its request
limits. The answer holds ``check`` with its ``status`` (``up``, ``down``, ``unconfirmed_down``,
``unknown``, ``paused``) and ``lastresponsetime`` (milliseconds); errors come as
``{"error": {"statuscode", "statusdesc", "errormessage"}}``.

The query is the check's id. Its value is, by the ``field`` option, the last response time in
milliseconds (``lastresponsetime``, the default: no data while the check is down, paused or
unknown) or its status as a number (``status``: 1 up, 0 down or unconfirmed down, no data when
paused or unknown).

Every answer carries ``Req-Limit-Short`` and ``Req-Limit-Long`` (``Remaining: 394 Time until
reset: 3589``). When either has nothing remaining, this worker process sends no request with
that token until it resets, or for 20 minutes at most (`pulse.net.api.bounded`; then one request
asks again): its polls meanwhile find no data, saying why. A 429 is retried when the used-up
limit resets (at most 20 minutes later), else after its Retry-After. A status Pingdom does not
document is a failure that quotes it, never a note (notes reach subscribers).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from typing import Any

import pulse
from pulse.metrics.integrations.base import Integration, Sample, json_object, malformed
from pulse.net import AddressPolicy, Request, Response
from pulse.net.api import ApiError, bounded, call, json_field, quote, retry_after

LABEL = "Pingdom"
USER_AGENT = f"Pulse/{pulse.__version__} (metrics)"
API = "https://api.pingdom.com/api/3.1"
FIELDS = ("lastresponsetime", "status")
STATUS_VALUES = {"up": 1.0, "down": 0.0, "unconfirmed_down": 0.0}
STATUSES = ("up", "down", "unconfirmed_down", "unknown", "paused")
_LIMIT = re.compile(r"Remaining:\s*(\d+)\s+Time until reset:\s*(\d+)", re.IGNORECASE)
_CHECK_ID = re.compile(r"\d{1,18}")

# Until when (time.monotonic()) each account, by its API base and token, must not be called.
_resting: dict[tuple[str, str], float] = {}
_resting_lock = threading.Lock()


def check(text: str, options: Mapping[str, Any]) -> None:
    """Refuse a query that is not a check id, or a ``field`` Pingdom does not give."""
    if not _CHECK_ID.fullmatch(text.strip()):
        raise ValueError("a Pingdom query is the id of a check (a number)")
    if options.get("field", FIELDS[0]) not in FIELDS:
        raise ValueError(f"a Pingdom metric's field is {' or '.join(FIELDS)}")


def query(
    settings: Mapping[str, Any], text: str, options: Mapping[str, Any], policy: AddressPolicy, timeout_s: float
) -> Sample:
    """Read the check ``text``; the `Sample` its ``field`` gives, or `ApiError`."""
    try:
        check(text, options)
    except ValueError as e:
        raise ApiError(f"{LABEL}: {e}", permanent=True) from None
    base = (settings.get("url") or API).rstrip("/")
    account = (base, settings["bearer_token"])
    with _resting_lock:
        wait = _resting.get(account, 0.0) - time.monotonic()
    if wait > 0:
        return Sample(None, f"{LABEL}'s request limit is used up; it resets in {wait:.0f} s")
    headers = {
        "User-Agent": USER_AGENT,
        "Accept": "application/json",
        "Authorization": f"Bearer {settings['bearer_token']}",
    }
    request = Request("GET", f"{base}/checks/{text.strip()}", headers, None, timeout_s, keep_alive=True)
    try:
        response = call(request, policy, vendor=LABEL, reason=json_field("error.errormessage"), wait=_wait)
    except ApiError as e:
        if e.status == 429:
            _rest(account, e.retry_after or 0.0)
        raise
    _rest(account, _reset(response))
    found = json_object(response, LABEL).get("check")
    if not isinstance(found, dict):
        raise malformed(LABEL)
    if found.get("status") not in STATUSES:
        said = quote(request, found.get("status"))
        raise ApiError(f"{LABEL}: the check's status {said} is not one Pingdom documents", permanent=True)
    return _sample(found, options.get("field", FIELDS[0]))


def _sample(found: Mapping[str, Any], field: str) -> Sample:
    status = found.get("status")  # one of STATUSES
    if field == "status":
        if status in STATUS_VALUES:
            return Sample(STATUS_VALUES[status])
        return Sample(None, f"the check is {status}")
    if status != "up":
        return Sample(None, f"the check is {status}")
    value = found.get("lastresponsetime")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise malformed(LABEL)
    return Sample.of(float(value))


def _reset(response: Response) -> float:
    """Seconds until the longest of the used-up request limits resets (0 if none is used up),
    `bounded` whatever the headers say."""
    waits = [0.0]
    for name in ("req-limit-short", "req-limit-long"):
        found = _LIMIT.search(response.headers.get(name, ""))
        if found and float(found[1]) == 0:
            waits.append(bounded(float(found[2])))
    return max(waits)


def _wait(response: Response) -> float:
    """Seconds a 429 asks to wait: until the used-up limit resets, else the usual Retry-After."""
    return _reset(response) or retry_after(response)


def _rest(account: tuple[str, str], seconds: float) -> None:
    """No request for ``account`` for ``seconds`` (nothing if 0)."""
    if seconds > 0:
        with _resting_lock:
            _resting[account] = max(_resting.get(account, 0.0), time.monotonic() + seconds)


INTEGRATION = Integration(
    kind="pingdom",
    label=LABEL,
    query=query,
    fields=("url", "bearer_token"),
    optional=("url",),
    options=("field",),
    check=check,
)
