"""The uvicorn server of `pulse serve`: one process, one event loop, HTTP/1.1 through h11.

What bounds a request, and where:

- its head (request line and headers): ``MAX_HEAD_BYTES``, however it arrives; past it, 431 and the
  connection closed (`pulse.inbound.protocol`);
- its arrival: the whole request within ``request_deadline_s`` (`pulse.inbound.protocol`), else the
  connection is closed: a slow client holds a connection that long at most;
- its body: per route (`pulse.inbound.bounds`), 413;
- connections: at most ``max_connections`` public ones open at once, ``max_per_address`` from one
  client address; one more closes the connection idle the longest between two requests, else the one
  whose request has been arriving the longest, or, when every connection runs a request, is answered
  503 and closed as it opens (`pulse.inbound.protocol`; uvicorn's ``limit_concurrency`` would accept
  and hold it). Each connection runs one request at a time (pipelined requests are answered in
  order), so requests in flight are bounded too;
- an idle kept-alive connection is closed after ``KEEP_ALIVE_S``.

Those closings are counted in the telemetry and summed up in one log line a minute
(`pulse.inbound.closings`).

The client is the peer, unless the peer is one of ``trusted_proxies``: then its ``X-Forwarded-For``
names the client (and ``X-Forwarded-Proto`` the scheme). uvicorn's own default trusts them from
127.0.0.1, which would let anything on the host, or a proxy that passes the header on, write any text
as a client's address in the log.

SIGTERM or SIGINT stops it gracefully: it stops accepting, lets the requests in flight finish (at
most ``GRACE_S``), then exits.
"""

from __future__ import annotations

import socket

import uvicorn
from starlette.routing import BaseRoute

from pulse.errors import ConfigError
from pulse.inbound.app import create
from pulse.inbound.closings import Closings
from pulse.inbound.protocol import MAX_HEAD_BYTES, bounded
from pulse.inbound.telemetry import Telemetry

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
      served: the routes to serve (`pulse.app.serve.routes`: every domain's; tests pass their own).
      metrics_host, metrics_port: the telemetry's address (port 0: any free one; None: no telemetry);
        its port must differ from the public one.
      request_deadline_s: seconds a request has to arrive whole.
      max_connections: public connections open at once; one more closes the one idle the longest,
        else the one whose request has been arriving the longest, or is answered 503 and closed when
        every connection runs a request.
      max_per_address: the same, among the connections from one client address (a trusted proxy's
        have ``max_connections`` only).
      trusted_proxies: addresses and networks whose ``X-Forwarded-For`` names the client.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        served: list[BaseRoute],
        metrics_host: str = "127.0.0.1",
        metrics_port: int | None,
        request_deadline_s: float,
        max_connections: int,
        max_per_address: int,
        trusted_proxies: list[str] | None = None,
    ) -> None:
        if metrics_port is not None and metrics_port == port != 0:
            raise ConfigError(f"the telemetry's port must differ from the public one ({port})")
        self.sockets = [listen(host, port)]
        self.port = self.sockets[0].getsockname()[1]
        self.metrics_port: int | None = None
        if metrics_port is not None:
            self.sockets.append(listen(metrics_host, metrics_port))
            self.metrics_port = self.sockets[1].getsockname()[1]
        telemetry = Telemetry()
        self.closings = Closings(
            telemetry.closed,
            deadline_s=request_deadline_s,
            max_head_bytes=MAX_HEAD_BYTES,
            caps=f"{max_connections} connections, {max_per_address} per address",
        )
        trusted = trusted_proxies or []
        config = uvicorn.Config(
            create(served, metrics_port=self.metrics_port, telemetry=telemetry),
            http=bounded(
                deadline_s=request_deadline_s,
                max_connections=max_connections,
                max_per_address=max_per_address,
                telemetry_port=self.metrics_port,
                trusted=trusted,
                closings=self.closings,
            ),
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
            backlog=BACKLOG,
            timeout_keep_alive=KEEP_ALIVE_S,
            timeout_graceful_shutdown=GRACE_S,
            proxy_headers=bool(trusted),
            forwarded_allow_ips=trusted,
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
            self.closings.flush()

    def stop(self) -> None:
        """Stop gracefully, from another thread."""
        self.server.should_exit = True
