"""A local fake of Grafana's data source query API, as strict as the real one.

Grafana's documentation: "Data source HTTP API", "Query a data source"
(https://grafana.com/docs/grafana/latest/developers/http_api/data_source/#query-a-data-source).

    with Grafana() as grafana:
        grafana.series["up"] = [({"job": "api"}, [1.0, None])]     # per query: each series' labels, values
        ...query through Pulse with url=grafana.url, bearer_token=grafana.token, datasource=grafana.prometheus...

``POST /api/ds/query`` needs ``Authorization: Bearer`` with the service account token (401
otherwise) and a JSON body of ``queries`` (each with a ``refId`` and a ``datasource.uid``),
``from`` and ``to`` (epoch milliseconds or ``now-…``, 400 ``bad request data`` otherwise). A data
source it does not know is a 404 ``Data source not found``, one in `denied` a 403 ``Access denied
to data source``. It has a Prometheus data source (`prometheus`, whose model needs ``expr``) and
a MySQL one (`mysql`, ``rawSql``); each query's series come from `series`, keyed by its ``expr``
or ``rawSql``, as data frames: a time column and a number column. A query the data source refuses
(no ``expr``, unbalanced parentheses) gets ``error`` and ``status`` 400 in its result, a data
source in `down` ``status`` 502; an answer with a failed query has the HTTP status
`failed_status` (400, or 207 with Grafana's ``datasourceQueryMultiStatus`` feature, 500 in some
versions). Over `limit` requests per second it answers 429 with Retry-After. Set `broken` to a
JSON value to answer it, with 200, in place of a query's answer. Every request is kept in
`requests`.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from typing import Any

from tests.support.jsonapi import JsonApi

_RELATIVE = re.compile(r"now(-\d+[smhdw])?")


class Grafana(JsonApi):
    def __init__(self, *, limit: int = 100) -> None:
        self.token = "glsa_" + secrets.token_urlsafe(24)
        self.prometheus, self.mysql = "P" + secrets.token_hex(7), "M" + secrets.token_hex(7)
        self.series: dict[str, list[tuple[dict[str, str], list[float | None]]]] = {}
        self.denied: set[str] = set()
        self.down: set[str] = set()
        self.failed_status = 400
        self.broken: Any = None
        self.requests: list[dict[str, Any]] = []
        self.limit = limit
        super().__init__()

    def answer(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        if method != "POST" or path != "/api/ds/query":
            return 404, {"message": "Not found"}, {}
        if headers.get("authorization") != f"Bearer {self.token}":
            return 401, {"message": "invalid API key", "traceID": ""}, {}
        if self.left(self.limit, 1) < 0:
            return 429, {"message": "Too many requests"}, {"Retry-After": "1"}
        try:
            request = json.loads(body)
            queries = request["queries"]
            assert isinstance(queries, list) and queries
            assert all(isinstance(q["refId"], str) and isinstance(q["datasource"]["uid"], str) for q in queries)
            assert all(_time(request[bound]) for bound in ("from", "to"))
        except (ValueError, KeyError, TypeError, AssertionError):
            return 400, {"message": "bad request data", "traceID": ""}, {}
        self.requests.append({"headers": headers, "body": request})
        uids = {q["datasource"]["uid"] for q in queries}
        if uids - {self.prometheus, self.mysql}:
            return 404, {"message": "Data source not found", "traceID": ""}, {}
        if uids & self.denied:
            return 403, {"message": "Access denied to data source", "traceID": ""}, {}
        if self.broken is not None:
            return 200, self.broken, {}
        results = {q["refId"]: self._result(q) for q in queries}
        failed = any("error" in result for result in results.values())
        return (self.failed_status if failed else 200), {"results": results}, {}

    def _result(self, query: dict[str, Any]) -> dict[str, Any]:
        uid = query["datasource"]["uid"]
        if uid in self.down:
            return _error(502, 'Post "http://datasource:9090/api/v1/query": dial tcp 10.0.0.7:9090: connect: refused')
        field = "expr" if uid == self.prometheus else "rawSql"
        text = query.get(field)
        if not isinstance(text, str) or not text:
            return _error(400, f"query model has no {field}")
        if text.count("(") != text.count(")"):
            return _error(400, 'bad_data: invalid parameter "query": 1:1: parse error: unclosed left parenthesis')
        frames = [_frame(query["refId"], labels, values) for labels, values in self.series.get(text, [])]
        return {"status": 200, "frames": frames}


def _time(value: Any) -> bool:
    return isinstance(value, str) and (value.isdigit() or _RELATIVE.fullmatch(value) is not None)


def _error(status: int, message: str) -> dict[str, Any]:
    return {"error": message, "errorSource": "downstream", "status": status}


def _frame(ref: str, labels: dict[str, str], values: list[float | None]) -> dict[str, Any]:
    """A data frame as Grafana's Prometheus data source encodes it: columns, times in ms."""
    start = int(time.time() * 1000) - 15_000 * len(values)
    return {
        "schema": {
            "refId": ref,
            "meta": {"type": "numeric-multi", "typeVersion": [0, 1], "custom": {"resultType": "vector"}},
            "fields": [
                {"name": "Time", "type": "time", "typeInfo": {"frame": "time.Time"}, "config": {"interval": 15000}},
                {
                    "name": "Value",
                    "type": "number",
                    "typeInfo": {"frame": "float64", "nullable": True},
                    "labels": labels,
                    "config": {"displayNameFromDS": ",".join(labels.values())},
                },
            ],
        },
        "data": {"values": [[start + 15_000 * i for i in range(len(values))], values]},
    }
