"""The uvicorn server of `pulse serve`: one process, one event loop, HTTP/1.1 through h11.

What bounds a request, and where:

- its head (request line and headers): ``MAX_HEAD_BYTES`` (h11's ``max_incomplete_event_size``);
  past it, uvicorn answers 400 and closes the connection;
- its arrival: the whole request within ``request_deadline_s`` (`pulse.inbound.protocol`), else the
  connection is closed: a slow client holds a connection that long at most;
- its body: per route (`pulse.inbound.bounds`), 413;
- connections: at most ``max_connections`` open at once; one more closes the connection whose
  request has been arriving the longest, or, when every connection runs a request, is answered 503
  and closed as it opens (`pulse.inbound.protocol`; uvicorn's ``limit_concurrency`` would accept and
  hold it). Each connection runs one request at a time, so requests in flight are bounded too;
- an idle kept-alive connection is closed after ``KEEP_ALIVE_S``.

SIGTERM or SIGINT stops it gracefully: it stops accepting, lets the requests in flight finish (at
most ``GRACE_S``), then exits.
"""

from __future__ import annotations

import socket

import uvicorn
from starlette.routing import BaseRoute

from pulse.config import Settings
from pulse.inbound.app import create
from pulse.inbound.protocol import bounded

MAX_HEAD_BYTES = 16 * 1024
KEEP_ALIVE_S = 5
GRACE_S = 10
BACKLOG = 128


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: any free port). Its protocol is TCP by number,
    as asyncio needs to set ``TCP_NODELAY`` on the connections it accepts (without it, a kept-alive
    connection waits 40 ms for each answer's second write: Nagle against delayed ACKs)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(BACKLOG)
    return sock


class Service:
    """The service bound to its sockets, not yet serving: `run` serves until stopped.

    Parameters:
      host, port: the public address (port 0: any free port; `port` says which).
      metrics_port: the telemetry port on the same host (0: any free one; None: no telemetry).
      request_deadline_s: seconds a request has to arrive whole.
      max_connections: connections open at once; one more closes the one whose request has been
        arriving the longest, or is answered 503 and closed when every connection runs a request.
      served: the routes (default: `pulse.inbound.routes.routes`); tests pass their own.
    """

    def __init__(
        self,
        settings: Settings,
        host: str,
        port: int,
        *,
        metrics_port: int | None,
        request_deadline_s: float,
        max_connections: int,
        served: list[BaseRoute] | None = None,
    ) -> None:
        self.sockets = [listen(host, port)]
        self.port = self.sockets[0].getsockname()[1]
        self.metrics_port: int | None = None
        if metrics_port is not None:
            self.sockets.append(listen(host, metrics_port))
            self.metrics_port = self.sockets[1].getsockname()[1]
        config = uvicorn.Config(
            create(settings, metrics_port=self.metrics_port, served=served),
            http=bounded(deadline_s=request_deadline_s, max_connections=max_connections),
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
            backlog=BACKLOG,
            timeout_keep_alive=KEEP_ALIVE_S,
            timeout_graceful_shutdown=GRACE_S,
            lifespan="off",
            log_config=None,
            server_header=False,
        )
        self.server = uvicorn.Server(config)

    def run(self) -> None:
        """Serve until SIGTERM or SIGINT (in the main thread) or `stop`."""
        try:
            self.server.run(sockets=self.sockets)
        finally:
            for sock in self.sockets:
                sock.close()

    def stop(self) -> None:
        """Stop gracefully, from another thread."""
        self.server.should_exit = True


def from_settings(settings: Settings, host: str | None = None, port: int | None = None) -> Service:
    """The service as the settings say, ``host`` and ``port`` overriding theirs."""
    return Service(
        settings,
        settings.serve_host if host is None else host,
        settings.serve_port if port is None else port,
        metrics_port=settings.serve_metrics_port,
        request_deadline_s=settings.serve_request_deadline_s,
        max_connections=settings.serve_max_connections,
    )
