"""A location's egress self-check: can it reach the internet at all?

A location configured with canaries (``PULSE_LOCATION_CANARIES``: a few ``host:port`` anyone can
reach, e.g. public DNS resolvers on 53 or well-known sites on 443) asks them whenever a batch
has a check that failed: when not one of them accepts a TCP connection, the location's own
network is down, and its failures say nothing of the components checked: they abstain
(`pulse.locations.quorum`). A batch whose checks all passed proves the way out by itself, so
canaries cost nothing while all is well. Their answer is kept `FRESH_S` seconds, for every batch
of the process.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from pulse.config import Canary

logger = logging.getLogger(__name__)

FRESH_S = 10.0  # seconds a canary answer is kept
TIMEOUT_S = 3.0  # seconds each canary has to accept a connection


class Egress:
    """Whether the canaries answer, asked at most once every `FRESH_S` seconds per process."""

    def __init__(self, canaries: Sequence[Canary], location: str) -> None:
        self.canaries = tuple(canaries)
        self.location = location
        self.lock = threading.Lock()
        self.asked_at = -FRESH_S
        self.up = True

    def ok(self) -> bool:
        """True when a canary answers (or none is configured); False when none does."""
        if not self.canaries:
            return True
        with self.lock:
            if time.monotonic() - self.asked_at >= FRESH_S:
                up = self._ask()
                if up != self.up:
                    self._tell(up)
                self.up, self.asked_at = up, time.monotonic()
            return self.up

    def _ask(self) -> bool:
        with ThreadPoolExecutor(len(self.canaries)) as pool:
            return any(pool.map(_answers, self.canaries))

    def _tell(self, up: bool) -> None:
        if up:
            logger.info("Location %s reaches its canaries again: its checks count again.", self.location)
        else:
            logger.warning(
                "Location %s cannot reach the internet: none of its canaries (%s) answers; its failed checks "
                "abstain (the central workers decide without them) until one does.",
                self.location,
                ", ".join(f"{host}:{port}" for host, port in self.canaries),
            )


def _answers(canary: Canary) -> bool:
    try:
        with socket.create_connection(canary, timeout=TIMEOUT_S):
            return True
    except OSError:
        return False
