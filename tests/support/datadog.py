"""A local fake of Datadog's metrics query API (v1), as strict as the real one.

Datadog's documentation: "Query timeseries points" (https://docs.datadoghq.com/api/latest/metrics/#query-timeseries-points)
and "Rate limits" (https://docs.datadoghq.com/api/latest/rate-limits/).

    with Datadog() as datadog:
        datadog.series["avg:api.latency{*}"] = [[[t_ms, 120.0], [t_ms, None]]]   # one series, its points
        ...query through Pulse with url=datadog.url, api_key=datadog.api_key, app_key=datadog.app_key...

``GET /api/v1/query`` requires ``DD-API-KEY`` and ``DD-APPLICATION-KEY`` (403 ``{"errors":
["Forbidden"]}`` otherwise), and ``from``, ``to`` (whole seconds, from before to) and ``query``
(400 ``{"errors": [...]}`` otherwise, and for a query that does not parse). A query it does not
know returns no series. Over `limit` requests per `period` seconds it answers 429 with the
``X-RateLimit-*`` headers. Every request is kept in `requests`. Set `broken` to a JSON value to
answer it, with 200, in place of a query's answer (an answer broken in transit or by a proxy).
"""

from __future__ import annotations

import secrets
from typing import Any

from tests.support.jsonapi import JsonApi


class Datadog(JsonApi):
    def __init__(self, *, limit: int = 1000, period: int = 10) -> None:
        self.api_key = secrets.token_hex(16)
        self.app_key = secrets.token_hex(20)
        self.series: dict[str, list[list[list[Any]]]] = {}
        self.requests: list[dict[str, Any]] = []
        self.broken: Any = None
        self.limit, self.period = limit, period
        super().__init__()

    def answer(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        self.requests.append({"path": path, "query": query, "headers": headers})
        remaining = self.left(self.limit, self.period)
        limits = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Period": str(self.period),
            "X-RateLimit-Remaining": str(max(remaining, 0)),
            "X-RateLimit-Reset": str(self.period),
            "X-RateLimit-Name": "query",
        }
        if method != "GET" or path != "/api/v1/query":
            return 404, {"errors": ["Not found"]}, {}
        if headers.get("dd-api-key") != self.api_key or headers.get("dd-application-key") != self.app_key:
            return 403, {"errors": ["Forbidden"]}, {}
        if remaining < 0:
            return (
                429,
                {"errors": ["Rate limit of 1000 requests in 3600 seconds reached. Please try again later."]},
                limits,
            )
        try:
            start, end = int(query["from"][0]), int(query["to"][0])
            text = query["query"][0]
        except (KeyError, ValueError, IndexError):
            return 400, {"errors": ["The value provided for parameter 'from', 'to' or 'query' is invalid"]}, limits
        if start >= end:
            return 400, {"errors": ["The value provided for parameter 'from' is invalid"]}, limits
        if text.count("(") != text.count(")") or text.count("{") != text.count("}") or "{" not in text:
            return (
                400,
                {"errors": [f"Error parsing query: \n unable to parse {text}: Rule 'scope_expr' didn't match"]},
                limits,
            )
        if self.broken is not None:
            return 200, self.broken, limits
        series: list[dict[str, Any]] = [
            {
                "metric": text,
                "display_name": text,
                "expression": text,
                "scope": "*",
                "tag_set": [],
                "aggr": None,
                "pointlist": points,
                "start": start * 1000,
                "end": end * 1000,
                "interval": 20,
                "length": len(points),
                "query_index": 0,
                "unit": None,
                "attributes": {},
            }
            for points in self.series.get(text, [])
        ]
        answer = {
            "status": "ok",
            "res_type": "time_series",
            "resp_version": 1,
            "query": text,
            "from_date": start * 1000,
            "to_date": end * 1000,
            "group_by": [],
            "message": "",
            "series": series,
            "times": [],
            "values": [],
        }
        return 200, answer, limits
