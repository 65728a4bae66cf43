"""The application factory: the routes it is given (`pulse.app.serve.routes`) in Starlette, behind
`Access`, which writes one log line per request and counts it in the telemetry.

A log line names the route's template (``/ping/{token}``), never the path it was given: paths and
query strings carry tokens, which are credentials. A request refused (`RefusedError`: over a bound, over
its rate, a token that cannot be one) is one WARNING line with the reason; any other is one INFO line.

A request the database cannot take (PostgreSQL down or restarting, a connection that died while idle,
no pooled connection free within `pulse.db.POOL_WAIT`) is answered 503 with ``Retry-After``, one
WARNING line naming the reason, never a traceback: nothing was recorded, or (a commit whose answer was
lost) the sender's retry records it again: a second ping, an event repeating its dedup key. The pool's
idle connections are dropped then (after a restart they are all dead), so the next request opens a
fresh one: the service recovers by itself.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import peewee
from playhouse.pool import MaxConnectionsExceeded
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Match
from starlette.types import Message, Receive, Scope, Send

from pulse.db import db
from pulse.inbound.bounds import RefusedError
from pulse.inbound.telemetry import Telemetry

logger = logging.getLogger("pulse.inbound")

RETRY_AFTER_S = 5  # what a 503 asks the sender to wait: about a PostgreSQL restart
UNAVAILABLE = (peewee.OperationalError, peewee.InterfaceError, MaxConnectionsExceeded)


def create(
    served: list[BaseRoute],
    *,
    metrics_port: int | None = None,
    telemetry: Telemetry | None = None,
) -> Access:
    """The service's ASGI application.

    Parameters:
      metrics_port: the local port whose requests are for the telemetry (``/metrics``) and nothing
        else; None serves no telemetry.
      served: the routes to serve (`pulse.app.serve.routes`: every domain's; tests pass their own).
    """
    handlers = {RefusedError: _refused, ClientDisconnect: _gone, **dict.fromkeys(UNAVAILABLE, _unavailable)}
    app = Starlette(routes=served, exception_handlers=handlers)
    return Access(app, telemetry or Telemetry(), metrics_port)


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RefusedError)
    request.state.refusal = exc.reason
    headers = {"Cache-Control": "no-store", **exc.headers}
    if exc.status == 413:  # the body is left unread: the connection cannot carry another request
        headers["Connection"] = "close"
    if exc.body is not None:
        return JSONResponse(exc.body, status_code=exc.status, headers=headers)
    return PlainTextResponse(f"{exc.reason[:1].upper()}{exc.reason[1:]}.\n", status_code=exc.status, headers=headers)


async def _unavailable(request: Request, exc: Exception) -> Response:
    """The database could not take the request: 503, the reason in the log line (not to the client)."""
    if isinstance(exc, peewee.OperationalError | peewee.InterfaceError) and db.obj is not None:
        await run_in_threadpool(db.obj.close_idle)  # it waits for the pool's lock, held while one connects
    line = (str(exc).strip().splitlines() or [""])[0][:300] or type(exc).__name__
    request.state.refusal = f"the database is unavailable ({line})"
    headers = {"Cache-Control": "no-store", "Retry-After": str(RETRY_AFTER_S)}
    return PlainTextResponse("The database is unavailable: try again later.\n", status_code=503, headers=headers)


async def _gone(request: Request, exc: Exception) -> Response:
    """The client closed its connection (or it was closed at the request's deadline, which said so)
    before its body arrived: nothing is answered, or written."""
    request.state.gone = True
    return Response(status_code=400)


class Access:
    """The ASGI middleware around the application: the telemetry port's requests go to the
    telemetry; every other request is timed, logged and counted."""

    def __init__(self, app: Starlette, telemetry: Telemetry, metrics_port: int | None) -> None:
        self.app = app
        self.telemetry = telemetry
        self.metrics_port = metrics_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.metrics_port is not None and (scope.get("server") or ("", None))[1] == self.metrics_port:
            response = await self.telemetry.endpoint(Request(scope, receive))
            await response(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # unless a response starts
        state: dict[str, Any] = scope.setdefault("state", {})
        done = False

        def finish() -> None:
            nonlocal done
            if not done:
                done = True
                seconds = time.perf_counter() - started
                route = template(self.app.routes, scope)
                self.telemetry.observe(route, status, seconds)
                _log(scope, route, status, seconds, state.get("refusal"), gone=state.get("gone", False))

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finish()  # before the answer's last bytes: a client that has its answer finds the line written
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            finish()


def template(candidates: list[BaseRoute], scope: Scope) -> str:
    """The template of the route serving ``scope``'s path (``-`` when none does)."""
    for route in candidates:
        match, _ = route.matches({**scope, "type": "http"})
        if match is not Match.NONE:
            return str(getattr(route, "path", "-"))
    return "-"


def _log(scope: Scope, route: str, status: int, seconds: float, refusal: str | None, *, gone: bool) -> None:
    client = (scope.get("client") or ("-",))[0]
    fields = {"method": scope["method"], "route": route, "status": status, "duration_ms": round(seconds * 1000, 1)}
    if gone:
        logger.info("%s %s: the client left before its request was whole", scope["method"], route, extra=fields)
    elif refusal:
        logger.warning(
            "Refused a request from %s (%s %s): answered %d: %s.",
            client,
            scope["method"],
            route,
            status,
            refusal,
            extra=fields,
        )
    else:
        logger.info("%s %s %d", scope["method"], route, status, extra=fields)
