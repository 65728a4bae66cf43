"""How many results each location may send a central worker process, per minute.

A location's results cost the central workers a query each, whether or not they count: past its
allowance (``PULSE_LOCATION_RESULTS_PER_MINUTE``, per process, each process counting alone), its
further messages that minute are dropped unread. What was dropped, and how many of its results
did not count because no batch sent it their slot or the slot was no longer waiting for it
(`pulse.locations.verdict`), is told in one WARNING line per location and minute, with the first
results after that minute (a location that stops sending is told of once it sends again).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable

from pulse.config import get_settings

logger = logging.getLogger(__name__)

MINUTE_S = 60.0


class Allowance:
    """Parameters:
    per_minute: results a location may send this process in a minute.
    clock: seconds, monotonic (tests pass their own).
    """

    def __init__(self, *, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self._lock = threading.Lock()
        self._since = clock()
        self._sent: Counter[str] = Counter()
        self._over: Counter[str] = Counter()
        self._unsent: Counter[str] = Counter()

    def admit(self, location: str, results: int) -> bool:
        """Count a message of ``results`` from ``location``: False (dropped) when it would take the
        location past its allowance this minute."""
        with self._lock:
            self._turn()
            if self._sent[location] + results > self.per_minute:
                self._over[location] += results
                return False
            self._sent[location] += results
            return True

    def unsent(self, location: str, results: int) -> None:
        """Count ``results`` of ``location`` that did not count (no batch sent it their slot, or the
        slot no longer waits for it)."""
        if results:
            with self._lock:
                self._unsent[location] += results

    def _turn(self) -> None:
        """At the first count after a minute: tell what each location had dropped, and start again."""
        if self.clock() - self._since < MINUTE_S:
            return
        for location in sorted(self._over | self._unsent):
            logger.warning(
                "Location %s: %d of its results dropped in the last minute: %d past its allowance of %d a "
                "minute (PULSE_LOCATION_RESULTS_PER_MINUTE), %d for slots not sent to it, answered already or "
                "past their time. Its slots are decided without them.",
                location,
                self._over[location] + self._unsent[location],
                self._over[location],
                self.per_minute,
                self._unsent[location],
            )
        self._since = self.clock()
        self._sent.clear()
        self._over.clear()
        self._unsent.clear()


@functools.cache
def allowance() -> Allowance:
    """This process's allowance, from its settings."""
    return Allowance(per_minute=get_settings().location_results_per_minute)
