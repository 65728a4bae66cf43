"""A time limit on every actor, below RabbitMQ's 30-minute consumer timeout."""

from __future__ import annotations

from typing import Any

import dramatiq
from dramatiq.middleware import MiddlewareError

MAX_TIME_LIMIT = 25 * 60 * 1000  # milliseconds


class TimeLimit(dramatiq.middleware.TimeLimit):
    """dramatiq's time limit, with a default of 5 minutes that no actor may raise above 25.

    The limit interrupts Python code, not a blocking system call: every I/O call in Pulse has its
    own timeout as well.

    Parameters:
      time_limit(int): default limit of an actor, in milliseconds.
    """

    def __init__(self, *, time_limit: int = 300_000) -> None:
        if not 0 < time_limit <= MAX_TIME_LIMIT:
            raise ValueError(f"time_limit must be between 1 and {MAX_TIME_LIMIT} ms")
        super().__init__(time_limit=time_limit)

    def before_declare_actor(self, broker: dramatiq.Broker, actor: dramatiq.Actor) -> None:
        limit = actor.options.get("time_limit", self.time_limit)
        if not 0 < limit <= MAX_TIME_LIMIT:
            raise MiddlewareError(f"actor {actor.actor_name}: time_limit must be between 1 and {MAX_TIME_LIMIT} ms")

    def before_process_message(self, broker: dramatiq.Broker, message: Any) -> None:
        # A message may carry its own limit; it is capped like an actor's.
        if message.options.get("time_limit", 0) > MAX_TIME_LIMIT:
            message.options["time_limit"] = MAX_TIME_LIMIT
        super().before_process_message(broker, message)
