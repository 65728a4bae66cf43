"""uvicorn's HTTP/1.1 protocol (h11) with a cap on connections and a deadline on each request's
arrival.

uvicorn's own cap (``limit_concurrency``) answers 503 to a request arriving while the open
connections (its own included) or running requests reach it, but accepts and holds every connection
meanwhile. Here a connection over ``max_connections`` closes the open connection whose request has
been arriving the longest (a slow client's: a request sent whole takes a moment), with one WARNING
line, so slow clients holding every connection cannot keep others out; when no request is arriving
(every connection is running one), the new connection is answered 503 and closed at once, with one
WARNING line, as it opens.

The one to close is chosen once the loop has read what is waiting on the connections, not as the new
one opens: connections accepted together (a burst of reconnecting slow clients, say) are made one
after the other before any of them is read, so a client that sent its request whole just before the
burst would otherwise be, to the server, the one arriving the longest.

uvicorn times out an idle keep-alive connection (``timeout_keep_alive``) but never a request still
arriving: a client sending its headers or body a byte at a time would hold its connection for ever.
Here each request must arrive whole (request line, headers and body) within ``deadline_s`` seconds of
its connection opening, or of its first byte on a kept-alive connection; past it, the connection is
closed and one WARNING line says so. Time the application spends answering is not counted.

uvicorn's access log is off: its line holds the path and the query, which carry tokens (its
``access_log=False`` only detaches the logger when uvicorn configures logging, which Pulse does
itself). `pulse.inbound.app` logs each request by its route instead.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

logger = logging.getLogger("pulse.inbound")


BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"


class Room:
    """The closings owed to connections admitted over the cap, not yet made (`BoundedProtocol`)."""

    def __init__(self) -> None:
        self.owed = 0


class BoundedProtocol(H11Protocol):
    """Parameters (class attributes, set by `bounded`):
    deadline_s: seconds a request has to arrive whole.
    max_connections: connections open at once; one more closes the one whose request has been
      arriving the longest, or is answered 503 and closed when none is arriving.
    """

    deadline_s: float = 10.0
    max_connections: int = 64
    room: Room  # the service's, shared by its connections
    _deadline: asyncio.TimerHandle | None = None  # while a request arrives
    _arriving_since = 0.0  # the loop's time when the request arriving began

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.access_log = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if self._open() > self.max_connections:
            if len(self._arriving()) <= self.room.owed:  # none left to close: every other runs a request
                client = self.client[0] if self.client else "-"
                logger.warning(
                    "Refused a connection from %s: %d are open already; it is answered 503 and closed.",
                    client,
                    self.max_connections,
                )
                transport.write(BUSY)
                transport.close()
                return
            # One is closed once the loop has read what is waiting (a timer runs after the reads of
            # its loop iteration): this one's request, or another's just accepted, may be there.
            self.room.owed += 1
            self.loop.call_later(0, self._make_room)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.conn.their_state is h11.IDLE:  # a new request begins
            self._arm()
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        if self._deadline is not None and self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._disarm()  # arrived whole (or the connection is done)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _open(self) -> int:
        return sum(not c.transport.is_closing() for c in self.connections)

    def _arriving(self) -> list[BoundedProtocol]:
        """The open connections whose request is arriving."""
        return [
            c
            for c in self.connections
            if isinstance(c, BoundedProtocol) and c._deadline is not None and not c.transport.is_closing()
        ]

    def _make_room(self) -> None:
        """Close the connection whose request has been arriving the longest, if the connections are
        still over the cap and one is arriving (if every one has arrived meanwhile, they are over the
        cap by one until a connection closes)."""
        self.room.owed -= 1
        arriving = self._arriving()
        if self._open() <= self.max_connections or not arriving:
            return
        slowest = min(arriving, key=lambda c: c._arriving_since)
        logger.warning(
            "Closed a connection from %s to make room (%d are open at most): its request had been arriving for %.1f s.",
            slowest.client[0] if slowest.client else "-",
            self.max_connections,
            self.loop.time() - slowest._arriving_since,
        )
        slowest._disarm()
        slowest.transport.close()

    def _arm(self) -> None:
        self._arriving_since = self.loop.time()
        self._deadline = self.loop.call_later(self.deadline_s, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            return
        client = self.client[0] if self.client else "-"
        logger.warning(
            "Refused a request from %s: not sent whole within %g s; the connection is closed.",
            client,
            self.deadline_s,
        )
        self.transport.close()


def bounded(*, deadline_s: float, max_connections: int) -> Any:
    """The protocol class for uvicorn's ``http`` option, with its bounds."""
    return type(
        "BoundedProtocol",
        (BoundedProtocol,),
        {"deadline_s": deadline_s, "max_connections": max_connections, "room": Room()},
    )
