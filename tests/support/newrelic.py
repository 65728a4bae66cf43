"""A local fake of New Relic's NerdGraph (GraphQL) API for NRQL queries, as strict as the real one.

New Relic's documentation: "NerdGraph tutorial: Make NRQL queries"
(https://docs.newrelic.com/docs/apis/nerdgraph/examples/nerdgraph-nrql-tutorial/) and "NerdGraph
usage limits" (https://docs.newrelic.com/docs/apis/nerdgraph/nerdgraph-usage-limits/).

    with NewRelic() as newrelic:
        newrelic.results["SELECT count(*) FROM Transaction"] = [{"count": 1000}]
        ...query through Pulse with url=newrelic.url, account_id=newrelic.account_id, api_key=newrelic.api_key...

``POST /graphql`` takes a JSON body of ``query`` and ``variables``. No ``API-Key`` is a 401; a
wrong one, like every other GraphQL error, is an HTTP 200 whose ``errors`` say so (``BAD_API_KEY``)
and whose ``data`` is null where it failed. The query must select ``actor.account(id).nrql(query)
.results`` with the account and NRQL given as variables; an account the key cannot read is a
FORBIDDEN error, NRQL that does not start with SELECT or FROM an INVALID_INPUT "NRQL Syntax Error",
and a query in `slow` a TIMEOUT. Over `concurrency` requests in flight it answers 429. While `gate`
is clear, answers wait for it (`inside` counts the requests waiting). Every request is kept in
`requests`.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from typing import Any

from tests.support.jsonapi import JsonApi

_SHAPE = re.compile(r"actor\s*\{\s*account\s*\(\s*id\s*:\s*\$(\w+)\s*\)\s*\{\s*nrql\s*\(\s*query\s*:\s*\$(\w+)")


class NewRelic(JsonApi):
    def __init__(self, *, concurrency: int = 25) -> None:
        self.account_id = 1_000_000 + secrets.randbelow(8_000_000)
        self.api_key = "NRAK-" + secrets.token_hex(14).upper()
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.slow: set[str] = set()
        self.requests: list[dict[str, Any]] = []
        self.concurrency = concurrency
        self.gate = threading.Event()
        self.gate.set()
        self.inside = threading.Semaphore(0)
        self.in_flight = 0
        super().__init__()

    def answer(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        with self.lock:
            self.in_flight += 1
            over = self.in_flight > self.concurrency
        try:
            if over:
                return 429, _errors("Too many concurrent requests; limit is 25 per user"), {}
            self.inside.release()
            self.gate.wait()
            return self._answer(method, path, headers, body)
        finally:
            with self.lock:
                self.in_flight -= 1

    def _answer(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, Any, dict[str, str]]:
        if method != "POST" or path != "/graphql":
            return 404, {"error": "Not Found"}, {}
        if not headers.get("api-key"):
            return 401, _errors("Unauthorized", error_code="BAD_API_KEY"), {}
        try:
            request = json.loads(body)
            text, variables = request["query"], request.get("variables") or {}
        except (ValueError, KeyError, TypeError):
            return 400, _errors("Must provide query string."), {}
        self.requests.append({"headers": headers, "query": text, "variables": variables})
        if headers["api-key"] != self.api_key:
            return 200, _errors("Invalid API key", error_code="BAD_API_KEY", data=None), {}
        if not headers.get("content-type", "").startswith("application/json"):
            return 400, _errors("Must provide query string."), {}
        shape = _SHAPE.search(text)
        if not shape or "results" not in text:
            return 200, _errors("Cannot query field on type Actor", error_class="INVALID_INPUT", data=None), {}
        account, nrql = variables.get(shape[1]), variables.get(shape[2])
        if not isinstance(account, int) or isinstance(account, bool) or not isinstance(nrql, str):
            return 200, _errors(f"Variable ${shape[1]} of type Int! was provided invalid value", data=None), {}
        if account != self.account_id:
            return 200, _failed(f"Not authorized to access account {account}", "FORBIDDEN"), {}
        if not re.match(r"\s*(SELECT|FROM)\b", nrql, re.IGNORECASE):
            word = (nrql.split() or [""])[0]
            return (
                200,
                _failed(f"NRQL Syntax Error: Error at line 1 position 1, unexpected '{word}'", "INVALID_INPUT"),
                {},
            )
        if nrql in self.slow:
            return 200, _failed("NRDB query duration exceeded the query timeout", "TIMEOUT"), {}
        results = self.results.get(nrql, [])
        return 200, {"data": {"actor": {"account": {"nrql": {"results": results}}}}}, {}


def _errors(message: str, *, error_class: str = "", error_code: str = "", **data: Any) -> dict[str, Any]:
    extensions = {"errorClass": error_class} if error_class else {}
    if error_code:
        extensions["error_code"] = error_code
    return {"errors": [{"message": message, "extensions": extensions}], **data}


def _failed(message: str, error_class: str) -> dict[str, Any]:
    """An error in the nrql field: New Relic's GraphQL answer, with the path and a null field."""
    error = {"message": message, "path": ["actor", "account", "nrql"], "extensions": {"errorClass": error_class}}
    return {"errors": [error], "data": {"actor": {"account": {"nrql": None}}}}
