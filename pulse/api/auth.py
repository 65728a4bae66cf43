"""The API's authentication: `api_route`, a route whose requests carry ``Authorization: Bearer
TOKEN`` (`pulse.api.tokens`). A request is answered in this order:

1. no bearer token, or one that cannot be a token: 401, no database touched;
2. over the token's rate (`pulse.inbound.limits`, by the token's digest): 429 with ``Retry-After``;
3. in a worker thread with a database connection, the token's row looked up by its digest: unknown,
   expired or revoked, 401 (the same answer for each, with ``WWW-Authenticate: Bearer``: nothing
   tells a caller which); without the route's scope, 403 naming it; else the route's ``read`` runs
   (a write's, `pulse.api.writes`, with its body).

A token's ``last_used_at`` is written when it is over a minute old (at most once a minute per
token, by a conditional UPDATE: two processes do not both write it), never on each request.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from pulse.api.declared import Asked, DeclaredRoute, Operation
from pulse.api.tokens import TOKEN
from pulse.db import db
from pulse.inbound.bounds import RefusedError
from pulse.inbound.limits import TokenBuckets
from pulse.inbound.tokens import authorization, digest
from pulse.models import utcnow
from pulse.models.api_token import ApiToken

RATE_PER_S = 10.0  # requests a token may make a second, on average
BURST = 50  # and at once after a quiet spell
TOUCH_EVERY = timedelta(minutes=1)  # a token's last_used_at is written at most this often
UNAUTHORIZED = "a valid bearer token is required"


@dataclass(frozen=True)
class Answer:
    """A route's answer when it is more than JSON with 200: its status and headers (``ETag``,
    ``Location``); ``body`` None answers no body (204)."""

    body: Any
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)


def answered(answer: Any) -> Response:
    """The response of what a route returned: `Answer`, or JSON data answered with 200."""
    if not isinstance(answer, Answer):
        answer = Answer(answer)
    headers = {**answer.headers, "Cache-Control": "no-store"}
    if answer.body is None:
        return Response(status_code=answer.status, headers=headers)
    return JSONResponse(answer.body, status_code=answer.status, headers=headers)


@dataclass(frozen=True)
class Call:
    """What a route's ``read`` is given: the token's organization and what the request asked.

    Parameters:
      organization_id: the token's organization, the only one whose rows the route reads.
      params: the route's path parameters.
      query: the query string's parameters (the last of each name).
    """

    organization_id: int
    params: Mapping[str, str]
    query: Mapping[str, str]


Read = Callable[[Call], Any]  # JSON-able data, in a worker thread with a database connection


def error(status: int, text: str, *, headers: dict[str, str] | None = None) -> RefusedError:
    """A refusal answered as ``{"error": text}`` (``text`` goes to the log line too: never a secret)."""
    return RefusedError(status, text, headers=headers, body={"error": text})


def unauthorized(reason: str) -> RefusedError:
    """401, the same answer whatever ``reason`` is (which goes to the log line alone)."""
    return RefusedError(401, reason, headers={"WWW-Authenticate": "Bearer"}, body={"error": UNAUTHORIZED})


def api_route(
    path: str, read: Read, *, scope: str, buckets: TokenBuckets, doc: Operation | None = None
) -> DeclaredRoute:
    """A GET route at ``path`` answering what ``read`` returns, as JSON, to a token with ``scope``.

    Parameters:
      scope: the scope a token needs (`pulse.models.api_token.SCOPES`).
      buckets: the rate limiter the API's routes share.
      doc: what the OpenAPI document says of it (`pulse.api.openapi`); ``read`` is given the query
        parameters it declares, and no other.
    """

    async def endpoint(request: Request) -> Response:
        key = bearer(request, buckets)
        query: Mapping[str, str] = dict(request.query_params)
        if doc is not None:
            query = Asked(query, doc.query)
        call = (dict(request.path_params), query)
        return answered(await run_in_threadpool(_answer, read, key, scope, call, utcnow()))

    return DeclaredRoute(path, endpoint, needs=scope, operations={"GET": doc})


def bearer(request: Request, buckets: TokenBuckets) -> bytes:
    """The digest of the request's bearer token, within its rate: else 401 or 429."""
    token = authorization(request)
    if token is None:
        raise unauthorized("no bearer token")
    if not TOKEN.fullmatch(token):
        raise unauthorized("a malformed bearer token")
    key = digest(token)
    wait = buckets.take(key)
    if wait:
        retry = math.ceil(wait)
        raise error(429, f"over this token's rate: retry in {retry} s", headers={"Retry-After": str(retry)})
    return key


def _answer(read: Read, key: bytes, scope: str, call: tuple[dict[str, str], Mapping[str, str]], now: datetime) -> Any:
    with db.connection_context():
        row = authenticate(key, scope, now)
        return read(Call(organization_id=row.organization_id, params=call[0], query=call[1]))


def authenticate(key: bytes, scope: str, now: datetime) -> ApiToken:
    """The token whose digest is ``key``, if it may use ``scope`` at ``now``: else 401 or 403."""
    row = ApiToken.get_or_none(ApiToken.token_sha256 == key)
    if row is None:
        raise unauthorized("an unknown token")
    if row.revoked_at is not None:
        raise unauthorized(f"a revoked token (id {row.id})")
    if row.expires_at is not None and row.expires_at <= now:
        raise unauthorized(f"an expired token (id {row.id})")
    if scope not in row.scopes:
        raise error(403, f"this token lacks the {scope} scope")
    if row.last_used_at is None or now - row.last_used_at >= TOUCH_EVERY:
        stale = ApiToken.last_used_at.is_null() | (ApiToken.last_used_at <= now - TOUCH_EVERY)
        ApiToken.update(last_used_at=now).where(ApiToken.id == row.id, stale).execute()
    return row
