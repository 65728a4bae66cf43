"""Datadog: a timeseries query of the metrics API v1.

Datadog's documentation: "Query timeseries points" (https://docs.datadoghq.com/api/latest/metrics/#query-timeseries-points),
"Authentication" (https://docs.datadoghq.com/account_management/api-app-keys/) and "Rate limits"
(https://docs.datadoghq.com/api/latest/rate-limits/). ``GET {site}/api/v1/query?from&to&query``
with ``DD-API-KEY`` and ``DD-APPLICATION-KEY``; the answer holds ``series``, each with a
``pointlist`` of ``[milliseconds, value or null]``.

The value of a series is its last point that is not null, over the last `WINDOW_S`; several series
are made one by the query's ``aggregate`` option, as for Prometheus. Errors come as
``{"errors": [...]}`` (400 for a bad query, 403 for bad keys: both permanent); a 429 waits for
``X-RateLimit-Reset``; an answer of ``"status": "error"`` is a failure, not a value.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import pulse
from pulse.metrics.integrations.base import Integration, Sample, combine, json_object, malformed
from pulse.net import AddressPolicy, Request, Response
from pulse.net.api import ApiError, bounded, call, json_body, quote, retry_after

LABEL = "Datadog"
USER_AGENT = f"Pulse/{pulse.__version__} (metrics)"
WINDOW_S = 600  # seconds of points asked for: the last value that is not null within them counts
SITES = {
    "US1": "https://api.datadoghq.com",
    "US3": "https://api.us3.datadoghq.com",
    "US5": "https://api.us5.datadoghq.com",
    "EU1": "https://api.datadoghq.eu",
    "AP1": "https://api.ap1.datadoghq.com",
}


def query(
    settings: Mapping[str, Any], text: str, options: Mapping[str, Any], policy: AddressPolicy, timeout_s: float
) -> Sample:
    """Run the query ``text`` over the last `WINDOW_S`; the `Sample` it gives, or `ApiError`."""
    base = settings.get("url") or SITES[settings.get("site", "US1")]
    now = int(time.time())
    url = f"{base.rstrip('/')}/api/v1/query?" + urlencode({"from": now - WINDOW_S, "to": now, "query": text})
    headers = {
        "User-Agent": USER_AGENT,
        "Accept": "application/json",
        "DD-API-KEY": settings["api_key"],
        "DD-APPLICATION-KEY": settings["app_key"],
    }
    request = Request("GET", url, headers, None, timeout_s, keep_alive=True)
    response = call(request, policy, vendor=LABEL, reason=_errors, wait=_reset)
    answer = json_object(response, LABEL)
    if answer.get("status") == "error":  # an error answered with a 200
        raise ApiError(f"{LABEL}: {quote(request, answer.get('error') or 'error')}", permanent=True)
    listed = answer.get("series") or []
    if not isinstance(listed, list) or not all(isinstance(series, dict) for series in listed):
        raise malformed(LABEL)
    values = []
    for series in listed:
        pointlist = series.get("pointlist") or []
        if not isinstance(pointlist, list):
            raise malformed(LABEL)
        points = [p for p in pointlist if isinstance(p, list) and len(p) == 2 and p[1] is not None]
        if points:
            values.append(_number(points[-1][1]))
    if not values and listed:
        return Sample(None, f"no point in the last {WINDOW_S // 60} minutes")
    return combine(values, options, LABEL)


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ApiError(f"{LABEL}: a value in its answer is not a number", permanent=True) from None


def _reset(response: Response) -> float:
    """Seconds until the rate limit resets: ``X-RateLimit-Reset``, else the usual Retry-After;
    `bounded` either way."""
    try:
        return bounded(float(response.headers["x-ratelimit-reset"]))
    except (KeyError, ValueError):
        return retry_after(response)


def _errors(response: Response) -> str:
    """The reason of an error answer: its ``errors``, joined."""
    answer = json_body(response)
    errors = answer.get("errors") if isinstance(answer, dict) else None
    return "; ".join(str(e) for e in errors) if isinstance(errors, list) and errors else response.text


INTEGRATION = Integration(
    kind="datadog",
    label=LABEL,
    query=query,
    fields=("site", "url", "api_key", "app_key"),
    optional=("site", "url"),
    options=("aggregate",),
)
