"""A write route authenticated by a token of its own: `token_route`.

The token is in the URL path (``{token}`` in the route's path, as ping URLs carry it) or, when the
path has none, in the ``X-Pulse-Token`` header or ``Authorization: Bearer <token>`` (senders that
can set headers keep it out of their own logs: Alertmanager writes a failed webhook's URL in its
log). A request is answered in this order, and nothing is written before the last step:

1. a token that cannot be one (wrong length or characters): 404, no database touched;
2. over the token's rate (`pulse.inbound.limits`): 429 with ``Retry-After``;
3. a body over the route's bound: 413;
4. the domain's ``write`` runs in a worker thread with a database connection, and says whether the
   token named something of its own: when it did not, 404 (it wrote nothing). It may refuse what
   the request says (400). A domain that parses its body (an alert source's JSON) looks its token
   up before it does, so the body of a wrong token is never parsed; one that stores its body as it
   came (a ping's bytes) judges the token in the statement that writes.

A token is judged before what comes with it: a wrong token is 404 whatever the body, so a body
over the bound (3) or one the domain refuses (4) is answered 413 or 400 only once the domain's
``known`` has found the token (a lookup made on these refusals alone: a request that writes looks
its token up once, in its write).

A domain keeps each token's `digest` (never the token) and looks its row up by it: what an attacker
could time is the search for a SHA-256 digest, whose every byte changes with each guess, not a
comparison with the token.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from pulse.db import db
from pulse.inbound.bounds import RefusedError, read_body
from pulse.inbound.limits import TokenBuckets
from pulse.models import utcnow

TOKEN = re.compile(r"[A-Za-z0-9_-]{16,128}")
SECRET = re.compile(r"[A-Za-z0-9_-]{32,128}")  # a token a configuration file gives
HEADER = "X-Pulse-Token"


@dataclass(frozen=True)
class Arrival:
    """What arrived on a token route, handed to the domain's ``write``.

    Parameters:
      token: the token, a credential: never log it nor put it in an error text.
      params: the route's other path parameters (``kind`` in ``/ping/{token}/{kind}``).
      method: the HTTP method.
      body: the body, within the route's bound.
      now: when it arrived (UTC).
      headers: the request's headers (a vendor's signature), by name in any case.
    """

    token: str
    params: dict[str, str]
    method: str
    body: bytes
    now: datetime
    headers: Mapping[str, str]


Write = Callable[[Arrival], Response | None]
Known = Callable[[str], bool]  # whether a token names something of the domain's


def digest(token: str) -> bytes:
    """The SHA-256 digest a domain stores and looks a token up by."""
    return hashlib.sha256(token.encode()).digest()


def secret(value: str) -> str:
    """A token as a configuration file gives it (a ping token, an alert source's): 32 to 128
    letters, digits, ``-`` or ``_``, as it may be a part of a URL's path. Raises ValueError."""
    if not SECRET.fullmatch(value):
        raise ValueError("a token is 32 to 128 letters, digits, '-' or '_'")
    return value


def bearer(request: Request) -> str:
    """The token a request carries in its headers: ``X-Pulse-Token``, or ``Authorization: Bearer``."""
    return request.headers.get(HEADER) or authorization(request) or ""


def authorization(request: Request) -> str | None:
    """The credentials of ``Authorization: Bearer …`` (None without that header or scheme)."""
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else None


def token_route(
    path: str, write: Write, known: Known, *, methods: Sequence[str], max_body_bytes: int, buckets: TokenBuckets
) -> Route:
    """A route at ``path`` whose requests are authenticated by their token, then given to ``write``
    (a response, or None when the token named nothing); ``known`` says whether a token names
    something, for a request refused for its body.

    Parameters:
      methods: the HTTP methods answered (GET answers HEAD too).
      max_body_bytes: the bound of a body.
      buckets: the rate limiter, shared by the routes that share a budget.
    """

    async def endpoint(request: Request) -> Response:
        params = dict(request.path_params)
        token = params.pop("token", None) or bearer(request)
        if not TOKEN.fullmatch(token):
            raise RefusedError(404, "not a token")
        wait = buckets.take(digest(token))
        if wait:
            raise RefusedError(429, "over the token's rate", headers={"Retry-After": str(math.ceil(wait))})
        try:
            body = await read_body(request, max_body_bytes)
            arrival = Arrival(
                token=token, params=params, method=request.method, body=body, now=utcnow(), headers=request.headers
            )
            answer = await run_in_threadpool(_write, write, arrival)
        except RefusedError as e:
            if e.status in (400, 413) and not await run_in_threadpool(_known, known, token):
                raise RefusedError(404, "no such token") from None
            raise
        if answer is None:
            raise RefusedError(404, "no such token")
        return answer

    return Route(path, endpoint, methods=list(methods))


def _write(write: Write, arrival: Arrival) -> Response | None:
    with db.connection_context():
        return write(arrival)


def _known(known: Known, token: str) -> bool:
    with db.connection_context():
        return known(token)


def ok() -> Response:
    """The plain ``OK`` a sender expects of a write it made."""
    return PlainTextResponse("OK")
