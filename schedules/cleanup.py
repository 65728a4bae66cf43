"""Cleanup: every day at 00:00 UTC a tick sends the cleanup; every five minutes one sends a
rollup pass."""

import dramatiq

from actors.cleanup import cleanup, rollup
from pulse.ticks import Tick, cron


@dramatiq.actor(queue_name="cleanup", periodic=cron("0 0 * * *"), actor_class=Tick, max_retries=0, time_limit=30_000)
def daily_cleanup() -> None:
    cleanup.send()


@dramatiq.actor(queue_name="cleanup", periodic=cron("*/5 * * * *"), actor_class=Tick, max_retries=0, time_limit=30_000)
def rollups() -> None:
    rollup.send()
