"""Retries with exponential backoff; permanent failures skip them."""

from __future__ import annotations

from typing import Any

import dramatiq
import peewee
from dramatiq.middleware import MiddlewareError

from pulse.errors import PermanentError

# Delayed messages wait unacked in worker memory and RabbitMQ cancels a consumer that holds a
# message for 30 minutes, so no backoff may come near that.
MAX_BACKOFF = 20 * 60 * 1000  # milliseconds
PERMANENT = (PermanentError, TypeError, peewee.DataError)


class Retries(dramatiq.middleware.Retries):
    """dramatiq's retries with Pulse's defaults: 3 retries, backoff from 1 s doubling each time
    (with up to 100 % jitter, so retries of a burst spread out), never above 20 minutes.
    A `PermanentError` fails the message at once, to the dead letters, and so do the errors of a
    malformed message, which no retry fixes: a `TypeError` (wrong arguments) and a database
    `DataError` (a value of the wrong type or size).

    Parameters:
      max_retries(int): retries after the first attempt.
      min_backoff(int): backoff before the first retry, in milliseconds.
      max_backoff(int): the largest backoff, in milliseconds; at most `MAX_BACKOFF`.
    """

    def __init__(self, *, max_retries: int = 3, min_backoff: int = 1000, max_backoff: int = MAX_BACKOFF) -> None:
        super().__init__(max_retries=max_retries, min_backoff=min_backoff, max_backoff=min(max_backoff, MAX_BACKOFF))

    def before_declare_actor(self, broker: dramatiq.Broker, actor: dramatiq.Actor) -> None:
        if actor.options.get("max_backoff", 0) > MAX_BACKOFF:
            raise MiddlewareError(f"actor {actor.actor_name}: max_backoff is above {MAX_BACKOFF} ms")

    def after_process_message(
        self,
        broker: dramatiq.Broker,
        message: Any,
        *,
        result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        if isinstance(exception, PERMANENT):
            self.logger.warning("Permanent failure of message %r: not retried.", message.message_id)
            message.options["retries"] = message.options.get("retries", 0) + 1  # attempts so far
            message.fail()
            return
        super().after_process_message(broker, message, result=result, exception=exception)


def max_retries(broker: dramatiq.Broker, message: Any) -> int:
    """The retries ``message`` may have: its own option, else its actor's, else the `Retries`
    middleware's default (the same rule, read where it is applied)."""
    retries = next(m for m in broker.middleware if isinstance(m, dramatiq.middleware.Retries))
    actor = broker.get_actor(message.actor_name)
    return int(message.options.get("max_retries", actor.options.get("max_retries", retries.max_retries)))


def last_attempt(broker: dramatiq.Broker, message: Any) -> bool:
    """Whether this attempt of ``message`` is its last: if it fails transiently, the `Retries`
    middleware dead-letters it rather than retry it."""
    return message.options.get("retries", 0) >= max_retries(broker, message)
