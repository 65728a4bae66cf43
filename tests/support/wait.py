"""Waiting for an event the tests cannot be called back for (a row, a queue count)."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(probe: Callable[[], T], what: str, timeout: float = 30.0, every: float = 0.05) -> T:
    """Return the first truthy value of ``probe()``; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)
