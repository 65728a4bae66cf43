"""Cleanup: every day at 00:00 UTC a tick sends the cleanup; every five minutes one sends a
rollup pass."""

from actors.cleanup import cleanup, rollup
from pulse.recurring.ticks import tick


@tick("cleanup", "0 0 * * *")
def cleanup_tick() -> None:
    cleanup.send()


@tick("cleanup", "*/5 * * * *")
def rollup_tick() -> None:
    rollup.send()
