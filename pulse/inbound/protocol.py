"""uvicorn's HTTP/1.1 protocol (h11) with caps on connections, a bound on a request's head and a
deadline on each request's arrival.

Caps. uvicorn's own cap (``limit_concurrency``) answers 503 to a request arriving while the open
connections (its own included) or running requests reach it, but accepts and holds every connection
meanwhile. Here the public connections are capped twice: ``max_connections`` in all, and
``max_per_address`` from one client address (the peer's: a trusted proxy's connections have the first
cap only). A connection over a cap makes room among the connections that cap counts: it closes the
kept-alive connection idle the longest between two requests, else the connection whose request has
been arriving the longest (a slow client's: a request sent whole takes a moment); when every one is
running a request, the new connection is answered 503 and closed at once, as it opens. So clients
holding connections, idle or dripping, cannot keep others out, and a reverse proxy's pool of
kept-alive connections larger than a cap loses its idle ones first. The telemetry port's connections
are neither counted nor closed for the public ones.

The one to close is chosen once the loop has read what is waiting on the connections, not as the new
one opens: connections accepted together (a burst of reconnecting slow clients, say) are made one
after the other before any of them is read, so a client that sent its request whole just before the
burst would otherwise be, to the server, the one arriving the longest (and an idle connection whose
next request is waiting to be read, idle).

Head. h11 bounds a head only while it is incomplete (``max_incomplete_event_size``): a head of any
size sent in one write would be parsed. Here a head over ``MAX_HEAD_BYTES`` is answered 431 and the
connection closed, however it arrives.

Deadline. uvicorn times out an idle keep-alive connection (``timeout_keep_alive``) but never a request
still arriving: a client sending its headers or body a byte at a time would hold its connection for
ever. Here each request must arrive whole (request line, headers and body) within ``deadline_s``
seconds of its connection opening, or of its first byte on a kept-alive connection; past it, the
connection is closed. Time the application spends answering is not counted.

Half-close. A client that sends its requests, then closes its side (``shutdown(SHUT_WR)``, ``nc -N``)
has each request it sent whole answered, in order, before the connection is closed (asyncio would close
it at once, as the first request runs: recorded, never answered).

Each closing is counted, and summed up in the log once a minute (`pulse.inbound.closings`). uvicorn's
access log is off: its line holds the path and the query, which carry tokens (its
``access_log=False`` only detaches the logger when uvicorn configures logging, which Pulse does
itself). `pulse.inbound.app` logs each request by its route instead.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
from collections import Counter
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from pulse.inbound.closings import ARRIVING, DEADLINE, HEAD, IDLE, REFUSED, Closings

MAX_HEAD_BYTES = 16 * 1024
HEAD_END = re.compile(rb"\n\r?\n")  # the blank line ending a head, as h11 finds it
BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
HEAD_TOO_LARGE = b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Room:
    """The closings owed to connections admitted over a cap, not yet made, by what the cap counts:
    an address's connections, or every public one (``None``)."""

    def __init__(self) -> None:
        self.owed: Counter[str | None] = Counter()


class BoundedProtocol(H11Protocol):
    """Parameters (class attributes, set by `bounded`):
    deadline_s: seconds a request has to arrive whole.
    max_connections: public connections open at once.
    max_per_address: public connections open at once from one address, a trusted proxy's apart.
    telemetry_port: the local port of the telemetry, whose connections are not counted.
    trusted: the trusted proxies' networks.
    closings: what counts and logs the connections refused or closed.
    """

    deadline_s: float = 10.0
    max_connections: int = 64
    max_per_address: int = 32
    telemetry_port: int | None = None
    trusted: tuple[Network, ...] = ()
    room: Room  # the service's, shared by its connections
    closings: Closings
    public = True  # not the telemetry's
    address = "-"  # the peer's
    _deadline: asyncio.TimerHandle | None = None  # while a request arrives
    _arriving_since = 0.0  # the loop's time when the request arriving began
    _answered_at = 0.0  # the loop's time when its last response ended
    _eof = False  # the client closed its side

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.access_log = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.address = self.client[0] if self.client else "-"
        self.public = self.server is None or self.server[1] != self.telemetry_port
        over = self._over() if self.public else None
        if over is not None:
            scope = over[0]
            if len(self._closable(scope)) <= self.room.owed[scope]:  # every other runs a request
                self.closings.add(REFUSED, self.address)
                transport.write(BUSY)
                transport.close()
                return
            # One is closed once the loop has read what is waiting (a timer runs after the reads of
            # its loop iteration): this one's request, or another's just accepted, may be there.
            self.room.owed[scope] += 1
            self.loop.call_later(0, self._make_room, *over)
        self._arm()

    def eof_received(self) -> bool:  # type: ignore[override]  # asyncio.Protocol allows bool; uvicorn says None
        """Keep the connection open to answer the requests that arrived whole; close it otherwise."""
        self._eof = True
        return self._answering()

    def handle_events(self) -> None:
        if self.conn.their_state is h11.IDLE:  # a request's head is awaited
            pending = self.conn.trailing_data[0]
            if pending:
                if self._deadline is None:  # a new request begins
                    self._arm()
                if len(pending) >= MAX_HEAD_BYTES and HEAD_END.search(pending, 0, MAX_HEAD_BYTES) is None:
                    self._close(HEAD, self, HEAD_TOO_LARGE)
                    return
        super().handle_events()
        if self._deadline is not None and self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._disarm()  # arrived whole (or the connection is done)

    def on_response_complete(self) -> None:
        self._answered_at = self.loop.time()
        super().on_response_complete()  # it reads the next request, if one arrived meanwhile
        if self._eof and not self.transport.is_closing() and not self._answering():
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _answering(self) -> bool:
        """Whether a request that arrived whole is being answered."""
        return self.cycle is not None and not self.cycle.response_complete and self.conn.their_state is h11.DONE

    def _idle(self) -> bool:
        """Whether it is kept alive between two requests, nothing of the next one read."""
        return (
            self._deadline is None
            and self.cycle is not None
            and self.conn.their_state is h11.IDLE
            and self.conn.our_state is h11.IDLE
        )

    def _over(self) -> tuple[str | None, int] | None:
        """The connections this one puts over their cap, and the cap: its address's, then all."""
        if len(self._open(self.address)) > self.max_per_address and not self._trusted():
            return self.address, self.max_per_address
        if len(self._open(None)) > self.max_connections:
            return None, self.max_connections
        return None

    def _trusted(self) -> bool:
        if not self.trusted:
            return False
        try:
            address = ipaddress.ip_address(self.address)
        except ValueError:
            return False
        return any(address in network for network in self.trusted)

    def _open(self, scope: str | None) -> list[BoundedProtocol]:
        """The open public connections from the address ``scope`` (``None``: every one)."""
        return [
            c
            for c in self.connections
            if isinstance(c, BoundedProtocol)
            and c.public
            and not c.transport.is_closing()
            and (scope is None or c.address == scope)
        ]

    def _closable(self, scope: str | None) -> list[BoundedProtocol]:
        """The open connections of ``scope`` that may be closed to make room: idle or arriving."""
        return [c for c in self._open(scope) if c._deadline is not None or c._idle()]

    def _make_room(self, scope: str | None, cap: int) -> None:
        """Close the connection of ``scope`` idle the longest, else the one whose request has been
        arriving the longest, if they are still over ``cap`` (if every one runs a request
        meanwhile, they are over the cap by one until a connection closes)."""
        self.room.owed[scope] -= 1
        if not self.room.owed[scope]:
            del self.room.owed[scope]
        if len(self._open(scope)) <= cap:
            return
        idle = [c for c in self._open(scope) if c._idle()]
        if idle:
            self._close(IDLE, min(idle, key=lambda c: c._answered_at))
            return
        arriving = [c for c in self._open(scope) if c._deadline is not None]
        if arriving:
            self._close(ARRIVING, min(arriving, key=lambda c: c._arriving_since))

    def _close(self, reason: str, connection: BoundedProtocol, answer: bytes = b"") -> None:
        """Close ``connection`` (this one or another) for ``reason``, with ``answer`` first."""
        self.closings.add(reason, connection.address)
        connection._disarm()
        if answer:
            connection.transport.write(answer)
        connection.transport.close()

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
        self._close(DEADLINE, self)


def bounded(
    *,
    deadline_s: float,
    max_connections: int,
    max_per_address: int,
    telemetry_port: int | None,
    trusted: list[str],
    closings: Closings,
) -> Any:
    """The protocol class for uvicorn's ``http`` option, with its bounds."""
    attributes = {
        "deadline_s": deadline_s,
        "max_connections": max_connections,
        "max_per_address": max_per_address,
        "telemetry_port": telemetry_port,
        "trusted": tuple(ipaddress.ip_network(item, strict=False) for item in trusted),
        "room": Room(),
        "closings": closings,
    }
    return type("BoundedProtocol", (BoundedProtocol,), attributes)
