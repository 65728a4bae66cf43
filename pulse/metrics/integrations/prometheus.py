"""Prometheus: an instant query of the HTTP API.

Prometheus's documentation: "HTTP API", "Instant queries"
(https://prometheus.io/docs/prometheus/latest/querying/api/#instant-queries).
``POST {url}/api/v1/query`` with the query form-encoded; the answer is
``{"status": "success", "data": {"resultType": "vector" | "scalar" | ..., "result": ...}}`` or
``{"status": "error", "errorType": ..., "error": ...}`` (with a 4xx or 5xx status).

A vector of one series gives its value; of several, the query's ``aggregate`` option says how to
make one (``first``, ``sum``, ``avg``, ``min``, ``max``), and without it the poll fails, naming how
many series came back. A scalar gives its value. An empty vector, NaN and the infinities are no data.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import pulse
from pulse.metrics.integrations.base import Integration, Sample, combine, json_object, malformed
from pulse.net import AddressPolicy, Request
from pulse.net.api import ApiError, call, json_field, quote

LABEL = "Prometheus"
USER_AGENT = f"Pulse/{pulse.__version__} (metrics)"
# errorType values no retry fixes: the query itself is wrong, or names what does not exist.
_PERMANENT = frozenset({"bad_data", "execution", "not_found", "not_acceptable"})


def query(
    settings: Mapping[str, Any], text: str, options: Mapping[str, Any], policy: AddressPolicy, timeout_s: float
) -> Sample:
    """Run the instant query ``text``; the `Sample` it gives, or `ApiError`."""
    headers = {
        "User-Agent": USER_AGENT,
        "Accept": "application/json",
        "Content-Type": "application/x-www-form-urlencoded",
        **_auth(settings),
    }
    url = settings["url"].rstrip("/") + "/api/v1/query"
    request = Request("POST", url, headers, urlencode({"query": text}), timeout_s, keep_alive=True)
    response = call(request, policy, vendor=LABEL, reason=json_field("error"))
    answer = json_object(response, LABEL)
    if answer.get("status") != "success":  # an error answered with a 2xx (a proxy's, a gateway's)
        error_type, reason = answer.get("errorType") or "error", answer.get("error") or ""
        said = quote(request, f"{error_type}: {reason}".rstrip(": "))
        raise ApiError(f"{LABEL}: {said}", permanent=isinstance(error_type, str) and error_type in _PERMANENT)
    data = answer.get("data")
    if not isinstance(data, dict):
        raise malformed(LABEL)
    kind, result = data.get("resultType"), data.get("result")
    if kind == "scalar":
        return Sample.of(_number(result))
    if kind != "vector" or not isinstance(result, list):
        said = quote(request, kind)
        raise ApiError(f"{LABEL}: the query gives a {said}; it must give a vector or a scalar", permanent=True)
    return combine([_number(series.get("value")) for series in result if isinstance(series, dict)], options, LABEL)


def _number(point: Any) -> float:
    """The value of a ``[timestamp, "value"]`` pair; `ApiError` for anything else."""
    try:
        return float(point[1])
    except (TypeError, ValueError, LookupError):
        raise ApiError(f"{LABEL}: a value in its answer is not a number", permanent=True) from None


def _auth(settings: Mapping[str, Any]) -> dict[str, str]:
    if settings.get("bearer_token"):
        return {"Authorization": f"Bearer {settings['bearer_token']}"}
    if settings.get("username"):
        pair = f"{settings['username']}:{settings.get('password', '')}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}
    return {}


INTEGRATION = Integration(
    kind="prometheus",
    label=LABEL,
    query=query,
    fields=("url", "bearer_token", "username", "password"),
    optional=("bearer_token", "username", "password"),
    options=("aggregate",),
)
