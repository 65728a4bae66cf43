"""Dead letters: the record of messages that finally failed, and putting them back to work.

A dead message is in two places: its queue's ``.XQ`` (where RabbitMQ put it) and a
`FailedMessage` row (what `pulse dlq` lists). The row is the source of truth: it holds the whole
message, so a message can be requeued even after the ``.XQ`` dropped it (after 7 days).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from typing import Any

import dramatiq
from dramatiq import Message

from pulse import rabbitmq
from pulse.config import Settings
from pulse.db import db
from pulse.models import FailedMessage, utcnow
from pulse.rabbitmq import admin

MAX_TEXT = 20_000  # characters kept of an error message or traceback

# Options that belong to a previous life of the message, not to a fresh attempt.
RUN_OPTIONS = ("retries", "traceback", "requeue_timestamp", "eta", "redis_message_id")


def record(message: Any, exception: BaseException | None) -> FailedMessage:
    """Upsert the row of a message that has just been dead-lettered."""
    if exception is None:
        error_type, text, trace = "Unknown", "failed without an exception", ""
    else:
        error_type = type(exception).__name__
        text = str(exception) or error_type
        trace = "".join(traceback.format_exception(exception))
    row = {
        FailedMessage.message_id: message.message_id,
        FailedMessage.queue_name: message.queue_name,
        FailedMessage.actor_name: message.actor_name,
        FailedMessage.args: _storable(list(message.args)),
        FailedMessage.kwargs: _storable(message.kwargs),
        FailedMessage.options: _storable({k: v for k, v in message.options.items() if k != "traceback"}),
        FailedMessage.message_timestamp: message.message_timestamp,
        FailedMessage.error_type: error_type[:128],
        FailedMessage.error_message: _storable(text[:MAX_TEXT]),
        FailedMessage.traceback: _storable(trace[-MAX_TEXT:]),
        FailedMessage.attempts: max(1, message.options.get("retries", 0)),
        FailedMessage.failed_at: utcnow(),
        FailedMessage.requeued_at: None,
    }
    (
        FailedMessage.insert(row)
        .on_conflict(conflict_target=[FailedMessage.message_id], update={k: v for k, v in row.items()})
        .execute()
    )
    return FailedMessage.get(FailedMessage.message_id == message.message_id)


def _storable(value: Any) -> Any:
    """``value`` with every NUL character (which PostgreSQL text and JSONB refuse) made U+FFFD."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_storable(item) for item in value]
    if isinstance(value, dict):
        return {_storable(key): _storable(item) for key, item in value.items()}
    return value


def find(message: str) -> FailedMessage:
    """A dead message by its id in `pending` or its message id; LookupError says what is wrong."""
    query = FailedMessage.message_id == message
    if message.isdigit():
        query |= FailedMessage.id == int(message)
    row = FailedMessage.get_or_none(query)
    if row is None:
        raise LookupError(f"no dead message {message!r} (see `pulse dlq list`)")
    return row


def pending(queue_name: str | None = None, limit: int | None = None) -> list[FailedMessage]:
    """Dead messages not requeued since they last failed, newest first."""
    query = FailedMessage.select().where(FailedMessage.requeued_at.is_null()).order_by(FailedMessage.failed_at.desc())
    if queue_name:
        query = query.where(FailedMessage.queue_name == queue_name)
    if limit:
        query = query.limit(limit)
    return list(query)


def requeue(
    settings: Settings,
    broker: dramatiq.Broker,
    rows: Iterable[FailedMessage],
    *,
    advance: Callable[[int], object] | None = None,
) -> int:
    """Send dead messages back to their queues for a fresh set of attempts. Returns how many;
    ``advance(1)`` is called after each row.

    Each is first taken out of its ``.XQ`` (so it is not there twice), then marked requeued and
    sent in one transaction: if the send fails, the row stays dead; if the requeued message fails
    again, its new failure waits for this commit and wins. The mark is a guarded update, so a row
    already requeued (by an earlier or a concurrent command) is not sent twice.
    """
    rows = list(rows)
    by_queue: dict[str, set[str]] = {}
    for row in rows:
        by_queue.setdefault(row.queue_name, set()).add(row.message_id)
    for queue_name, ids in by_queue.items():
        admin.take_dead_letters(settings, queue_name, ids)
    sent = 0
    for row in rows:
        with db.atomic():
            claimed = (
                FailedMessage.update(requeued_at=utcnow(), requeue_count=FailedMessage.requeue_count + 1)
                .where(FailedMessage.id == row.id, FailedMessage.requeued_at.is_null())
                .execute()
            )
            if claimed:
                broker.enqueue(as_message(row))
                sent += 1
        if advance is not None:
            advance(1)
    return sent


def as_message(row: FailedMessage) -> Message:
    """The message of a row, ready for a fresh set of attempts (same id, so it can be traced)."""
    return Message(
        queue_name=row.queue_name,
        actor_name=row.actor_name,
        args=tuple(row.args),
        kwargs=row.kwargs,
        options={k: v for k, v in row.options.items() if k not in RUN_OPTIONS},
        message_id=row.message_id,
    )


def purge(settings: Settings, queues: Iterable[str]) -> tuple[int, int]:
    """Forget every dead message of these queues: rows and ``.XQ`` contents.
    Returns (rows deleted, messages dropped from the .XQ queues)."""
    queues = list(queues)
    rows = FailedMessage.delete().where(FailedMessage.queue_name.in_(queues)).execute()
    dropped = sum(admin.purge(settings, rabbitmq.xq(q)) for q in queues)
    return rows, dropped
