"""Connections kept alive between requests, per thread and origin: a metrics integration polled
every few seconds pays its TCP and TLS handshakes once, not on every poll.

A thread keeps at most one idle connection per origin, and the origin's key holds everything a
fresh connection would have been made under (scheme, host, port, TLS verification, address
policy), so a kept connection is only reused where a new one would have been allowed. A
connection is taken out while in use (no two requests share one), closed after `IDLE_S` idle
seconds (before the idle timeouts of common servers and load balancers, 60 s and more), and a
thread keeps at most `PER_THREAD` of them (the oldest idle one goes first).

A connection the server closed while it was idle is noticed before reuse and dropped; one closed
just as the next request is sent is `pulse.net.exchange`'s to retry on a fresh connection.
"""

from __future__ import annotations

import dataclasses
import select
import socket
import threading
import time
from datetime import datetime
from typing import Any

IDLE_S = 30.0
PER_THREAD = 16

#: (scheme, host, port, verify, address policy) of the connections that may serve a request.
Key = tuple[Any, ...]


@dataclasses.dataclass
class Kept:
    """An idle connection and what a response reports of it."""

    sock: socket.socket
    ip: str | None
    certificate_expiration_ms: float | None
    certificate_not_after: datetime | None = None
    since: float = dataclasses.field(default_factory=time.monotonic)


_local = threading.local()


def _idle() -> dict[Key, Kept]:
    idle: dict[Key, Kept] | None = getattr(_local, "idle", None)
    if idle is None:
        idle = _local.idle = {}
    return idle


def take(key: Key) -> Kept | None:
    """This thread's idle connection for ``key``, still open; None if there is none."""
    idle = _idle()
    _expire(idle)
    kept = idle.pop(key, None)
    if kept is not None and _closed_by_peer(kept.sock):
        kept.sock.close()
        return None
    return kept


def put(key: Key, kept: Kept) -> None:
    """Keep ``kept`` idle for the next request of this thread to ``key``."""
    idle = _idle()
    previous = idle.pop(key, None)
    if previous is not None:
        previous.sock.close()
    idle[key] = kept
    _expire(idle)
    while len(idle) > PER_THREAD:
        idle.pop(next(iter(idle))).sock.close()  # insertion order: the one idle longest


def close_all() -> None:
    """Close this thread's idle connections."""
    idle = _idle()
    while idle:
        idle.popitem()[1].sock.close()


def _expire(idle: dict[Key, Kept]) -> None:
    now = time.monotonic()
    for key in [key for key, kept in idle.items() if now - kept.since > IDLE_S]:
        idle.pop(key).sock.close()


def _closed_by_peer(sock: socket.socket) -> bool:
    """True if an idle connection has something to read: the server's close (or bytes nobody
    asked for), either way not a connection to send a request on."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))
