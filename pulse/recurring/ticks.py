"""Periodic ticks: actors that periodiq sends on a cron schedule, always read in UTC.

A tick is declared with `tick` in `schedules/`; its actor is named after its function, which ends
in ``_tick`` (``heartbeat_tick``, ``cleanup_tick``): the name periodiq logs and telemetry labels.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import dramatiq
import peewee
from dramatiq.errors import BrokerError
from periodiq import CronSpec

from pulse.rabbitmq import PRIORITY_URGENT

logger = logging.getLogger(__name__)

ZONE = "UTC"  # the zone every tick's cron is read in


class UtcCron(CronSpec):
    """A cron schedule read in UTC, whatever the scheduler's local time zone: `0 0 * * *` is
    00:00 UTC on a host set to America/New_York too, where periodiq's own `cron` would run it at
    05:00 UTC (04:00 in summer).

    periodiq asks the spec of each periodic actor whether a time matches (`validate`) and when it
    next does (`next_valid_date`), passing its local `pendulum.now()`; both read that instant in
    UTC here. periodiq compares and waits on instants, so an answer in UTC is a right one; its log
    lines (`Scheduling ... at`) still show the local time, with its offset.
    """

    def validate(self, date: Any) -> bool:
        return bool(super().validate(date.in_timezone(ZONE)))

    def next_valid_date(self, last: Any) -> Any:
        return super().next_valid_date(last.in_timezone(ZONE))


def cron(spec: str) -> UtcCron:
    """The `periodic=` option of a tick: ``spec`` (``m h dom mon dow``, as periodiq reads it) in UTC."""
    return UtcCron.parse(spec)


TIME_LIMIT_MS = 30_000  # a tick only sends messages, or runs one short statement


def tick(queue_name: str, spec: str, *, time_limit_ms: int = TIME_LIMIT_MS) -> Callable[[Callable[[], None]], Tick]:
    """Declare a tick: the decorated function, run on ``queue_name`` at each time of ``spec``
    (cron, in UTC). Not retried: the next tick comes soon enough. Its name ends in ``_tick``."""

    def declare(fn: Callable[[], None]) -> Tick:
        if not fn.__name__.endswith("_tick"):
            raise ValueError(f"a tick's name ends in _tick: {fn.__name__}")
        declared = dramatiq.actor(
            queue_name=queue_name, periodic=cron(spec), actor_class=Tick, max_retries=0, time_limit=time_limit_ms
        )(fn)
        assert isinstance(declared, Tick)
        return declared

    return declare


class Tick(dramatiq.Actor):
    """An actor whose messages go ahead of routine work in RabbitMQ, so a tick (the heartbeat,
    the outbox sweep) is not stuck behind a backlog of checks or deliveries.

    A tick periodiq cannot send (RabbitMQ is down) is logged and skipped: periodiq would
    otherwise die of the error, and no one would send the ticks once RabbitMQ is back. A tick that
    meets a database outage is skipped with one warning too, instead of going to the dead letters
    every minute: the next tick tries again (and `pulse health` shows the heartbeat growing stale).
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except (peewee.OperationalError, peewee.InterfaceError) as e:
            logger.warning(
                "%s skipped: the database is unavailable (%s); the next tick tries again.",
                self.actor_name,
                (str(e).strip().splitlines() or [type(e).__name__])[0],
            )
            return None

    def send_with_options(self, **options: Any) -> dramatiq.Message | None:  # type: ignore[override]
        options.setdefault("broker_priority", PRIORITY_URGENT)
        if "scheduled_at" not in options:  # not periodiq's call: let the caller see any error
            return super().send_with_options(**options)
        try:
            return super().send_with_options(**options)
        except BrokerError as e:
            logger.error(
                "%s of %s not sent, RabbitMQ is unreachable (%s); next tick as usual.",
                self.actor_name,
                options["scheduled_at"],
                type(e).__name__,
            )
            return None
