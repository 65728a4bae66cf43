"""Retries with exponential backoff; permanent failures skip them; one log line per failed attempt."""

from __future__ import annotations

import logging
import time
import traceback
from typing import Any

import dramatiq
import peewee
import pika.exceptions
from dramatiq.common import compute_backoff
from dramatiq.middleware import MiddlewareError
from dramatiq.middleware.time_limit import TimeLimitExceeded

from pulse.errors import PermanentError, PulseError

# Delayed messages wait unacked in worker memory and RabbitMQ cancels a consumer that holds a
# message for 30 minutes, so no backoff may come near that.
MAX_BACKOFF = 20 * 60 * 1000  # milliseconds
PERMANENT = (PermanentError, TypeError, peewee.DataError)
# Failures Pulse expects and handles (a provider down, a refusal, a database or broker outage, a
# time limit): one line says what happened and what comes next; a traceback would say "bug".
EXPECTED = (PulseError, TimeLimitExceeded, peewee.OperationalError, peewee.InterfaceError, pika.exceptions.AMQPError)


class Retries(dramatiq.middleware.Retries):
    """dramatiq's retries with Pulse's defaults: 3 retries, backoff from 1 s doubling each time
    (with up to 100 % jitter, so retries of a burst spread out), never above 20 minutes.
    A `PermanentError` fails the message at once, to the dead letters, and so do the errors of a
    malformed message, which no retry fixes: a `TypeError` (wrong arguments) and a database
    `DataError` (a value of the wrong type or size).

    Each failed attempt that will be retried is one WARNING line, ``send(11) attempt 2/4: Webhook:
    connection refused by 127.0.0.1; retrying in 4 s``; a message that fails for good is one ERROR
    line, from `pulse.middleware.dead_letters`. dramatiq's traceback is kept for the unexpected.

    Parameters:
      max_retries(int): retries after the first attempt.
      min_backoff(int): backoff before the first retry, in milliseconds.
      max_backoff(int): the largest backoff, in milliseconds; at most `MAX_BACKOFF`.
    """

    def __init__(self, *, max_retries: int = 3, min_backoff: int = 1000, max_backoff: int = MAX_BACKOFF) -> None:
        super().__init__(max_retries=max_retries, min_backoff=min_backoff, max_backoff=min(max_backoff, MAX_BACKOFF))
        worker_logger = logging.getLogger("dramatiq.worker.WorkerThread")
        if not any(isinstance(f, _NoTracebackForExpected) for f in worker_logger.filters):
            worker_logger.addFilter(_NoTracebackForExpected())

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
        if exception is None:
            return
        delay = self.failed(broker, message, exception, traceback.format_exc(limit=30))
        if delay is None:
            message.fail()  # to the dead letters, which say so in one line
        else:
            broker.enqueue(message, delay=delay)

    def failed(self, broker: dramatiq.Broker, message: Any, exception: BaseException, trace: str) -> int | None:
        """Count a failed attempt of ``message`` in its options; the delay (milliseconds) of its
        retry, said in one WARNING line, or None when it fails for good (permanent, or its
        retries are spent). The caller enqueues or dead-letters it."""
        failures = message.options.get("retries", 0)  # before this attempt
        allowed = max_retries(broker, message)
        message.options.update(
            retries=failures + 1,  # attempts so far
            traceback=trace,
            requeue_timestamp=int(time.time() * 1000),
        )
        if isinstance(exception, PERMANENT) or failures >= allowed:
            return None
        if isinstance(exception, dramatiq.Retry) and exception.delay is not None:
            delay = int(exception.delay)
        else:
            actor = broker.get_actor(message.actor_name)
            low = message.options.get("min_backoff", actor.options.get("min_backoff", self.min_backoff))
            high = min(
                message.options.get("max_backoff", actor.options.get("max_backoff", self.max_backoff)), MAX_BACKOFF
            )
            _, delay = compute_backoff(failures, factor=low, max_backoff=high)
        self.logger.warning(
            "%s attempt %d/%d: %s; retrying in %s.",
            named(message),
            failures + 1,
            allowed + 1,
            reason(exception),
            _seconds(delay),
        )
        return delay


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


def named(message: Any) -> str:
    """The message as a log line names it: ``send(11)``."""
    text = str(message)
    return text if len(text) <= 120 else text[:119] + "…"


def reason(exception: BaseException | None) -> str:
    """Why an attempt failed, in one line without a traceback."""
    if exception is None:
        return "unknown error"
    if isinstance(exception, TimeLimitExceeded):
        return "it ran past its time limit"
    if isinstance(exception, peewee.OperationalError | peewee.InterfaceError):
        return f"the database is unavailable ({_first_line(exception) or type(exception).__name__})"
    if isinstance(exception, pika.exceptions.AMQPError):
        return f"RabbitMQ is unavailable ({type(exception).__name__})"
    text = _first_line(exception)
    if isinstance(exception, PulseError | dramatiq.Retry):  # its text says it all
        return text or type(exception).__name__
    return f"{type(exception).__name__}: {text}" if text else type(exception).__name__


def _first_line(exception: BaseException) -> str:
    line = (str(exception).strip().splitlines() or [""])[0]
    return line if len(line) <= 300 else line[:299] + "…"


def _seconds(milliseconds: float) -> str:
    seconds = milliseconds / 1000
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"


class _NoTracebackForExpected(logging.Filter):
    """Drops dramatiq's "Failed to process message ... with unhandled exception" and its traceback
    when the exception is one Pulse expects: `Retries` and the dead letters say it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exception = record.exc_info[1] if record.exc_info else None
        return not (exception is not None and isinstance(exception, EXPECTED) and record.msg.startswith("Failed to"))
