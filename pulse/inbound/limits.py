"""A per-token rate limiter: one token bucket per token, in this process's memory.

Each process of the service counts alone (two processes allow twice the rate), and a restart forgets
the buckets. Buckets are kept by the token's SHA-256 digest, never the token, and at most ``size`` of
them: the least recently used is dropped first, so random tokens cannot grow the memory.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable


class TokenBuckets:
    """Parameters:
    rate_per_s: tokens a bucket regains per second.
    burst: the bucket's size: requests allowed at once after a quiet spell.
    size: buckets kept at most.
    clock: seconds, monotonic (tests pass their own).
    """

    def __init__(
        self, *, rate_per_s: float, burst: int, size: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate_per_s = rate_per_s
        self.burst = burst
        self.size = size
        self.clock = clock
        self._buckets: OrderedDict[str | bytes, tuple[float, float]] = OrderedDict()  # key: (level, when)
        self._lock = threading.Lock()

    def take(self, key: str | bytes) -> float:
        """Take one from ``key``'s bucket: 0 when allowed, else the seconds until one is back."""
        now = self.clock()
        with self._lock:
            level, then = self._buckets.pop(key, (float(self.burst), now))
            level = min(float(self.burst), level + (now - then) * self.rate_per_s)
            wait = 0.0 if level >= 1 else (1 - level) / self.rate_per_s
            self._buckets[key] = (level - 1 if wait == 0 else level, now)
            while len(self._buckets) > self.size:
                self._buckets.popitem(last=False)
        return wait
