"""Records every message that finally fails, as it goes to its queue's `.XQ`."""

from __future__ import annotations

import contextlib
import logging
import threading
import traceback
from typing import Any

import dramatiq
from dramatiq.errors import ActorNotFound

from pulse import deadletters
from pulse.db import db
from pulse.encoder import UNDECODABLE
from pulse.errors import PermanentError
from pulse.middleware.retries import Retries, named, reason

logger = logging.getLogger(__name__)


class DeadLetters(dramatiq.Middleware):
    """Writes a `FailedMessage` row (actor, arguments, error type, message and traceback) for each
    rejected message: retries exhausted, a permanent error, an actor this worker does not know, or
    a body that is not a message (see `pulse.encoder`).

    If the database cannot be written, the message is still in the `.XQ` and the error is logged.
    """

    def __init__(self) -> None:
        self.last = threading.local()

    def after_process_message(
        self, broker: dramatiq.Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        # The rejection comes after every after_process_message hook, in the same thread.
        self.last.failure = (message.message_id, exception)

    def before_nack(self, broker: dramatiq.Broker, message: Any) -> None:
        message_id, exception = getattr(self.last, "failure", (None, None))
        if message_id != message.message_id:
            exception = None
        if message.actor_name == UNDECODABLE:
            exception = PermanentError(message.options.get("problem", "the body is not a message"))
        elif exception is None and message.actor_name not in broker.actors:
            exception = ActorNotFound(message.actor_name)
        bury(message, exception)


def bury(message: Any, exception: BaseException | None, *, queued: bool = True) -> None:
    """Record a message that failed for good (`pulse.deadletters.record`) and say so in one ERROR
    line; ``queued``: it was consumed, and so is in its queue's ``.XQ`` too."""
    context = {"worker": message.queue_name, "jobId": message.message_id}  # the message's context is gone
    try:
        with db.connection_context() if db.is_closed() else contextlib.nullcontext():
            deadletters.record(message, exception)
    except Exception:
        where = f"it is in {message.queue_name}.XQ" if queued else "it was never queued, so it is in no .XQ"
        logger.exception("Could not record the dead message; %s.", where, extra=context)
    logger.error(
        "%s dead-lettered after %d attempt(s): %s (pulse dlq show %s).",
        named(message),
        max(1, message.options.get("retries", 0)),
        reason(exception),
        message.message_id,
        extra=context,
    )


def failed_alone(broker: dramatiq.Broker, message: Any, exception: BaseException) -> None:
    """A first attempt of ``message`` made outside it (one delivery of a batch) failed: retry
    ``message`` as `Retries` would have, or record it in the dead letters when it failed for good
    (a row `pulse dlq` lists, one ERROR line; it is in no ``.XQ``, never having been consumed)."""
    retries = next(m for m in broker.middleware if isinstance(m, Retries))
    trace = "".join(traceback.format_exception(exception, limit=30))
    delay = retries.failed(broker, message, exception, trace)
    if delay is None:
        bury(message, exception, queued=False)
    else:
        broker.enqueue(message, delay=delay)
