"""Grafana: a query of one of its data sources, through Grafana's data source query API.

Grafana's documentation: "Data source HTTP API", "Query a data source"
(https://grafana.com/docs/grafana/latest/developers/http_api/data_source/#query-a-data-source)
and "Service accounts". ``POST {url}/api/ds/query`` with a service account token as ``Bearer``
and ``{"queries": [{"refId", "datasource": {"uid"}, ...the data source's query model}], "from",
"to"}``; the answer holds ``results.<refId>.frames``, data frames whose ``data.values`` are
columns (a time column, then number columns), or ``results.<refId>.error`` and ``status``.

The query is the data source's query model as a JSON object (``{"rawSql": "..."}`` for SQL,
``{"query": "..."}`` for InfluxDB), or, as plain text, an instant ``expr`` (Prometheus, Loki).
Each number column of the frames is a series whose value is its last that is not null, over the
last `WINDOW_S`; several take the ``aggregate`` option, as for Prometheus.

A failed query comes back with HTTP 400, 500 or, with Grafana's ``datasourceQueryMultiStatus``
feature, 207; its own ``status`` says whether to retry: 4xx (a query the data source refuses)
fails for good, 5xx (the data source down, a timeout) is retried.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import pulse
from pulse.metrics.integrations.base import Integration, Sample, combine, json_object, malformed
from pulse.net import AddressPolicy, Request, Response
from pulse.net.api import ApiError, call, json_body, quote

LABEL = "Grafana"
USER_AGENT = f"Pulse/{pulse.__version__} (metrics)"
WINDOW_S = 600  # seconds of data asked for: a series' last value that is not null within them counts
REF = "A"


def check(text: str, options: Mapping[str, Any]) -> None:
    """Refuse a query that looks like a JSON query model but is not a JSON object."""
    if text.lstrip().startswith("{"):
        model(text)


def model(text: str) -> dict[str, Any]:
    """The data source's query model ``text`` gives: a JSON object as it is, plain text as an instant ``expr``."""
    if not text.lstrip().startswith("{"):
        return {"expr": text, "instant": True, "range": False}
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    if not isinstance(parsed, dict):
        raise ValueError("a Grafana query that starts with { must be a JSON object (the data source's query model)")
    return parsed


def query(
    settings: Mapping[str, Any], text: str, options: Mapping[str, Any], policy: AddressPolicy, timeout_s: float
) -> Sample:
    """Run ``text`` on the integration's data source over the last `WINDOW_S`; the `Sample` it gives, or `ApiError`."""
    try:
        body = model(text)
    except ValueError as e:
        raise ApiError(f"{LABEL}: {e}", permanent=True) from None
    now_ms = int(time.time() * 1000)
    payload = {
        "queries": [{**body, "refId": REF, "datasource": {"uid": settings["datasource"]}, "maxDataPoints": 100}],
        "from": str(now_ms - WINDOW_S * 1000),
        "to": str(now_ms),
    }
    headers = {
        "User-Agent": USER_AGENT,
        "Accept": "application/json",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {settings['bearer_token']}",
    }
    request = Request(
        "POST", settings["url"].rstrip("/") + "/api/ds/query", headers, json.dumps(payload), timeout_s, keep_alive=True
    )
    response = call(request, policy, vendor=LABEL, reason=_reason, judge=_status)
    result = _ref(json_object(response, LABEL))
    if result is None:
        raise malformed(LABEL)
    if result.get("error"):
        status = result.get("status")
        status = status if isinstance(status, int) and not isinstance(status, bool) else None
        transient = status is not None and status >= 500
        raise ApiError(f"{LABEL}: {quote(request, result['error'])}", permanent=not transient, status=status)
    return combine(_values(result.get("frames") or []), options, LABEL)


def _values(frames: Any) -> list[float]:
    """The last value that is not null of each number column of ``frames``."""
    if not isinstance(frames, list):
        raise malformed(LABEL)
    values = []
    for frame in frames:
        try:
            fields, columns = frame["schema"]["fields"], frame["data"]["values"]
        except (KeyError, TypeError):
            raise malformed(LABEL) from None
        for field, column in zip(fields, columns, strict=False):
            if isinstance(field, dict) and field.get("type") == "number" and isinstance(column, list):
                points = [value for value in column if value is not None]
                if points:
                    values.append(_number(points[-1]))
    return values


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ApiError(f"{LABEL}: a value in its answer is not a number", permanent=True)
    return float(value)


def _ref(answer: Any) -> dict[str, Any] | None:
    """The query's own part of an answer, ``results.A``, if there is one."""
    results = answer.get("results") if isinstance(answer, dict) else None
    result = results.get(REF) if isinstance(results, dict) else None
    return result if isinstance(result, dict) else None


def _reason(response: Response) -> str:
    """The reason of a failed answer: the query's ``error``, else Grafana's ``message``, else its text."""
    answer = json_body(response)
    error = (_ref(answer) or {}).get("error") or (answer.get("message") if isinstance(answer, dict) else None)
    return str(error) if error else response.text


def _status(response: Response) -> int:
    """The status a failed answer is judged by: the query's own, else the HTTP status."""
    status = (_ref(json_body(response)) or {}).get("status")
    return status if isinstance(status, int) and not isinstance(status, bool) else response.status or 0


INTEGRATION = Integration(
    kind="grafana",
    label=LABEL,
    query=query,
    fields=("url", "bearer_token", "datasource"),
    options=("aggregate",),
    check=check,
)
