"""The connections `pulse serve` refuses or closes to keep within its bounds (`pulse.inbound.protocol`),
each counted in the telemetry (``inbound_connections_closed_total{reason}``) and logged without
flooding the log: the first after a quiet spell is one WARNING line at once; those that follow within
``every_s`` seconds are summed up in one line then, and so on, a line per ``every_s`` at most for as
long as they come (clients opening connections by the thousand once wrote a line each).

The reasons (the counter's label):

- ``refused``: answered 503 and closed as it opened, every connection (or its address's) running a
  request;
- ``idle``: a kept-alive connection idle between two requests, closed to make room;
- ``arriving``: a connection whose request was arriving, closed to make room (no idle one was left);
- ``deadline``: its request was not sent whole within the request deadline;
- ``head``: its request's head (request line and headers) was over the bound, answered 431.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter as Tally

from prometheus_client import Counter

logger = logging.getLogger("pulse.inbound")

REFUSED, IDLE, ARRIVING, DEADLINE, HEAD = "refused", "idle", "arriving", "deadline", "head"
EVERY_S = 60.0
MAX_ADDRESSES = 1000  # addresses counted per line at most: random ones cannot grow the memory


class Closings:
    """Parameters:
    counter: the telemetry's counter, labelled by reason.
    deadline_s: the request deadline; max_head_bytes: the bound of a head (both for the lines).
    caps: what the lines say of the caps on connections: ``64 connections, 32 per address``.
    every_s: seconds between two lines at most.
    """

    def __init__(self, counter: Counter, *, deadline_s: float, max_head_bytes: int, caps: str,
                 every_s: float = EVERY_S) -> None:  # fmt: skip
        self.counter = counter
        self.caps = caps
        self.every_s = every_s
        self.reasons_said = {
            REFUSED: "answered 503 as it opened, every connection running a request",
            IDLE: "idle between two requests, closed to make room",
            ARRIVING: "closed to make room while a request was arriving",
            DEADLINE: f"a request not sent whole within {deadline_s:g} s",
            HEAD: f"answered 431, a request head over {max_head_bytes} bytes",
        }
        self.reasons: Tally[str] = Tally()  # since the last line
        self.addresses: Tally[str] = Tally()
        self._since: float | None = None  # when the last line was written, unless quiet since

    def add(self, reason: str, address: str) -> None:
        """Count one closing (in the event loop): said at once after a quiet spell, else summed up later."""
        self.counter.labels(reason).inc()
        if self._since is not None:
            self.reasons[reason] += 1
            if address in self.addresses or len(self.addresses) < MAX_ADDRESSES:
                self.addresses[address] += 1
            return
        logger.warning(
            "Closed a connection from %s to stay within the bounds (at most %s): %s. Its client may connect "
            "again; the next closings within %g s are summed up in one line.",
            address,
            self.caps,
            self.reasons_said[reason],
            self.every_s,
        )
        self._since = time.monotonic()
        asyncio.get_running_loop().call_later(self.every_s, self._tick)

    def _tick(self) -> None:
        """Sum up the closings of the spell just ended; after a quiet one, the next is said at once."""
        if not self.reasons:
            self._since = None
            return
        self.flush()
        self._since = time.monotonic()
        asyncio.get_running_loop().call_later(self.every_s, self._tick)

    def flush(self) -> None:
        """Write the line summing up the closings not said yet, if any (also as the service stops)."""
        if not self.reasons:
            return
        total = sum(self.reasons.values())
        address, most = self.addresses.most_common(1)[0]
        logger.warning(
            "Closed %d more %s in the last %.0f s to stay within the bounds (at most %s): %s; the most from %s "
            "(%d). Their clients may connect again.",
            total,
            "connection" if total == 1 else "connections",
            time.monotonic() - (self._since or 0.0),
            self.caps,
            "; ".join(f"{self.reasons_said[reason]}: {n}" for reason, n in self.reasons.most_common()),
            address,
            most,
        )
        self.reasons.clear()
        self.addresses.clear()
