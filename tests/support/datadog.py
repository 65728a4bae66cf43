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

import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit


class Datadog:
    def __init__(self, *, limit: int = 1000, period: int = 10) -> None:
        self.api_key = secrets.token_hex(16)
        self.app_key = secrets.token_hex(20)
        self.series: dict[str, list[list[list[Any]]]] = {}
        self.requests: list[dict[str, Any]] = []
        self.broken: Any = None
        self.limit, self.period = limit, period
        self.window: list[float] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.datadog = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, path: str, query: dict[str, list[str]], headers: dict[str, str]) -> tuple[int, Any, dict]:
        """The status, body and headers for one request."""
        with self.lock:
            self.requests.append({"path": path, "query": query, "headers": headers})
            now = time.monotonic()
            self.window = [t for t in self.window if now - t < self.period] + [now]
            remaining = self.limit - len(self.window)
        limits = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Period": str(self.period),
            "X-RateLimit-Remaining": str(max(remaining, 0)),
            "X-RateLimit-Reset": str(self.period),
            "X-RateLimit-Name": "query",
        }
        if path != "/api/v1/query":
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
        body = {
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
        return 200, body, limits

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Datadog:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        headers = {name.lower(): value for name, value in self.headers.items()}
        status, body, extra = self.server.datadog.answer(parts.path, parse_qs(parts.query), headers)  # type: ignore[attr-defined]
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass
