"""New Relic: an NRQL query through NerdGraph, New Relic's GraphQL API.

New Relic's documentation: "NerdGraph tutorial: Make NRQL queries"
(https://docs.newrelic.com/docs/apis/nerdgraph/examples/nerdgraph-nrql-tutorial/), "NerdGraph
usage limits" and "New Relic API keys". ``POST {endpoint}/graphql`` with the user key in
``API-Key`` runs ``actor { account(id) { nrql(query, timeout) { results } } }``; ``results`` is
a list of rows, each an object from a column name (``average.duration``) to its value.

GraphQL reports errors in ``errors``, usually with HTTP 200: they are failures, never values.
Those New Relic classes as ``TIMEOUT`` or server errors are retried; a bad key and every other
error (a query that does not parse, an account the key cannot read) fail for good.

The value of a row is its one numeric column (``field`` names it when a row has several; a
percentile's ``{"95": 0.4}`` counts as its one number). A TIMESERIES query's value is its last
bucket; a FACET query's rows are made one value by ``aggregate``, as for Prometheus. A null
(an average over no events) is no data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pulse
from pulse.metrics.integrations.base import Integration, Sample, combine, json_object, malformed
from pulse.net import AddressPolicy, Request, Response
from pulse.net.api import ApiError, call, json_body, quote

LABEL = "New Relic"
USER_AGENT = f"Pulse/{pulse.__version__} (metrics)"
REGIONS = {"US": "https://api.newrelic.com", "EU": "https://api.eu.newrelic.com"}
GRAPHQL = """query($id: Int!, $q: Nrql!, $t: Seconds) {
  actor { account(id: $id) { nrql(query: $q, timeout: $t) { results } } }
}"""
# Columns of a row that are not its value: TIMESERIES bucket bounds, the facet, a timestamp.
_NOT_VALUES = frozenset({"beginTimeSeconds", "endTimeSeconds", "facet", "timestamp"})
# errorClass values a retry may fix (those newrelic-client-go retries).
_TRANSIENT = frozenset({"TIMEOUT", "INTERNAL_SERVER_ERROR", "SERVER_ERROR"})


def query(
    settings: Mapping[str, Any], text: str, options: Mapping[str, Any], policy: AddressPolicy, timeout_s: float
) -> Sample:
    """Run the NRQL ``text`` in the integration's account; the `Sample` it gives, or `ApiError`."""
    base = settings.get("url") or REGIONS[settings.get("region", "US")]
    headers = {
        "User-Agent": USER_AGENT,
        "Accept": "application/json",
        "Content-Type": "application/json",
        "API-Key": settings["api_key"],
    }
    # New Relic's own time limit, under ours, so that a slow query ends with its TIMEOUT error.
    variables = {"id": settings["account_id"], "q": text, "t": max(int(timeout_s) - 1, 1)}
    body = json.dumps({"query": GRAPHQL, "variables": variables})
    request = Request("POST", base.rstrip("/") + "/graphql", headers, body, timeout_s, keep_alive=True)
    answer = json_object(call(request, policy, vendor=LABEL, reason=_messages), LABEL)
    if answer.get("errors"):  # GraphQL errors, answered with a 200
        raise _failure(request, answer["errors"])
    try:
        results = answer["data"]["actor"]["account"]["nrql"]["results"]
    except (KeyError, TypeError):
        raise malformed(LABEL) from None
    if not isinstance(results, list) or not all(isinstance(row, dict) for row in results):
        raise malformed(LABEL)
    return _sample(request, _latest(results), options)


def _latest(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows that count: of a TIMESERIES answer, each facet's last bucket; else all of them."""
    if not any("beginTimeSeconds" in row for row in rows):
        return rows
    last = {json.dumps(row.get("facet")): row for row in rows}  # buckets come oldest first
    return list(last.values())


def _sample(request: Request, rows: list[dict[str, Any]], options: Mapping[str, Any]) -> Sample:
    if not rows:
        return Sample(None, "the query returned no rows")
    field = options.get("field")
    values = [value for value in (_value(request, row, field) for row in rows) if value is not None]
    if not values:
        return Sample(None, "the query's value is null (no events in its window)")
    return combine(values, options, LABEL)


def _value(request: Request, row: dict[str, Any], field: str | None) -> float | None:
    """The value of one row: its ``field``, or its one numeric column. Column names are New
    Relic's text: error texts quote them."""
    if field is not None:
        if field not in row:
            raise ApiError(
                f"{LABEL}: the query's rows have no column {field!r} (they have {_names(request, row)})",
                permanent=True,
            )
        return _number(request, row[field], field)
    columns = {name: value for name, value in row.items() if name not in _NOT_VALUES and not isinstance(value, str)}
    if len(columns) != 1:
        raise ApiError(
            f"{LABEL}: the query's rows have {len(columns)} numeric columns ({_names(request, columns)}): "
            "name the one to use with `field`",
            permanent=True,
        )
    [(name, value)] = columns.items()
    return _number(request, value, name)


def _number(request: Request, value: Any, name: str) -> float | None:
    """A column's number: null is none; a percentile's ``{"95": 0.4}`` is its one number."""
    if isinstance(value, dict) and len(value) == 1:
        [value] = value.values()
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ApiError(f"{LABEL}: the column {quote(request, repr(name))} is not a number", permanent=True)
    return float(value)


def _names(request: Request, row: Mapping[str, Any]) -> str:
    return quote(request, ", ".join(sorted(row)[:10]) or "none")


def _failure(request: Request, errors: Any) -> ApiError:
    """The `ApiError` of GraphQL ``errors``: their messages; transient only for New Relic's
    timeout and server error classes."""
    errors = [e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else []
    messages = "; ".join(str(e.get("message") or "error") for e in errors) or "error"
    extensions = [e.get("extensions") for e in errors]
    classes = {str(found.get("errorClass", "")) for found in extensions if isinstance(found, dict)}
    return ApiError(f"{LABEL}: {quote(request, messages)}", permanent=not classes & _TRANSIENT)


def _messages(response: Response) -> str:
    """The reason of a non-2xx answer: its GraphQL errors' messages, else its text."""
    answer = json_body(response)
    errors = answer.get("errors") if isinstance(answer, dict) else None
    if isinstance(errors, list) and errors:
        return "; ".join(str(e.get("message")) for e in errors if isinstance(e, dict) and e.get("message"))
    return response.text


INTEGRATION = Integration(
    kind="newrelic",
    label=LABEL,
    query=query,
    fields=("region", "url", "account_id", "api_key"),
    optional=("region", "url"),
    options=("aggregate", "field"),
)
