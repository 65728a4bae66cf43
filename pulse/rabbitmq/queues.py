"""Pulse's queues on RabbitMQ, of the type the settings give (PULSE_QUEUE_TYPE): declared before a
worker or the scheduler starts, and moved from one type to the other by `pulse queues migrate`.

RabbitMQ never changes a queue's arguments, its type included: a queue declared with other
arguments than it has is refused (PRECONDITION_FAILED). `declare` turns that into one clear
error naming the queue and the way out, instead of consumers failing and reconnecting forever.

`migrate` moves each queue whose type differs, messages and all: to a holding queue, then back
into the queue declared anew. Every message is published (and confirmed) before it is acked, so
a crash half-way loses none (it may leave one twice, which Pulse's guards make harmless), and
running it again finishes the work.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import pika
import pika.exceptions

from pulse.config import Settings
from pulse.errors import ConfigError
from pulse.rabbitmq import CLASSIC, QUEUES, QUORUM, RESULTS, arguments, channel, dq, queue_names, urgent, xq

HOLDING = ".migrating"


def every_queue(queue_type: str) -> list[str]:
    """Every queue of a type: each queue workers consume, its ``.DQ`` and its ``.XQ``."""
    return [name for q in queue_names(queue_type) for name in (q, dq(q), xq(q))]


def declare(settings: Settings) -> None:
    """Make every queue exist with the settings' type, and the exchange of locations' results
    (`RESULTS`) deliver to the ``uptime`` queue. Raises ConfigError, naming the
    queue and the way to migrate, when one exists with other arguments."""
    with channel(settings) as ch:
        for name in every_queue(settings.queue_type):
            try:
                ch.queue_declare(name, durable=True, arguments=arguments(name, settings.queue_type))
            except pika.exceptions.ChannelClosedByBroker as e:
                if e.reply_code != 406:
                    raise
                raise ConfigError(mismatch(settings, name)) from None
        ch.exchange_declare(RESULTS, exchange_type="topic", durable=True)
        ch.queue_bind("uptime", RESULTS, routing_key="*")


def mismatch(settings: Settings, name: str) -> str:
    other = CLASSIC if settings.queue_type == QUORUM else QUORUM
    return (
        f"queue {name!r} exists in RabbitMQ with other arguments than PULSE_QUEUE_TYPE={settings.queue_type} "
        f"gives (a {other} queue, or one declared by another version), and RabbitMQ never changes them: "
        f"stop every worker and the scheduler, then run `pulse queues migrate` to move every queue, messages "
        f"and all, to {settings.queue_type} queues; or set PULSE_QUEUE_TYPE={other}"
    )


def migrate(settings: Settings, *, progress: Callable[[str, int], None] = lambda name, moved: None) -> dict[str, int]:
    """Give every queue the settings' type, keeping its messages; returns the messages moved into
    each queue that changed (one whose type already fits is not touched). With classic queues,
    the urgent twins of quorum queues are emptied into their queues (as urgent messages) and deleted.

    Refuses (ConfigError) while a queue has consumers: workers must be stopped, and the scheduler
    too (nothing tells that it publishes). ``progress(queue, moved)`` is called as each queue is done.
    """
    target = settings.queue_type
    moved: dict[str, int] = {}
    with channel(settings) as ch:
        connection = ch.connection
        _refuse_if_consumed(connection, every_queue(QUORUM))
        for name in every_queue(target):
            count = _give_type(connection, name, target)
            if count is not None:
                moved[name] = count
                progress(name, count)
        if target == CLASSIC:
            for q in QUEUES:
                for twin, home in ((urgent(q), q), (dq(urgent(q)), dq(q)), (xq(urgent(q)), xq(q))):
                    count = _fold(connection, twin, home, rename=(urgent(q), q))
                    if count is not None:
                        moved[twin] = count
                        progress(twin, count)
    return moved


def _refuse_if_consumed(connection: Any, names: list[str]) -> None:
    counts = {name: found.method.consumer_count for name in names if (found := _found(connection, name))}
    consumed = [f"{name} ({count})" for name, count in counts.items() if count]
    if consumed:
        raise ConfigError(
            "queues have consumers: " + ", ".join(consumed) + ": stop every worker and the scheduler first"
        )


# Each step has a channel of its own: a failed declare closes its channel, and RabbitMQ 3.10
# crashes a channel that publishes to a queue it knew as another type.


def _give_type(connection: Any, name: str, queue_type: str) -> int | None:
    """Make ``name`` a queue of ``queue_type`` with its messages; returns how many messages moved
    (None: the queue was of that type already)."""
    holding = name + HOLDING
    moved = None
    if not _declared(connection, name, arguments(name, queue_type)):
        with _confirming(connection) as ch:
            ch.queue_declare(holding, durable=True, arguments=_holding(queue_type))
            moved = _move(ch, name, holding)
            _delete_empty(ch, name)
            ch.queue_declare(name, durable=True, arguments=arguments(name, queue_type))
    if _found(connection, holding):  # this run's holding queue, or one left by a run that stopped half-way
        with _confirming(connection) as ch:
            moved = _move(ch, holding, name)
            _delete_empty(ch, holding)
    return moved


def _fold(connection: Any, twin: str, home: str, *, rename: tuple[str, str]) -> int | None:
    """Move an urgent twin's messages into its home queue (where their priority keeps them ahead)
    and delete it; returns how many moved (None: there was no such queue). ``rename``: as in `_move`."""
    if not _found(connection, twin):
        return None
    with _confirming(connection) as ch:
        moved = _move(ch, twin, home, rename=rename)
        _delete_empty(ch, twin)
    return moved


@contextlib.contextmanager
def _confirming(connection: Any) -> Iterator[Any]:
    ch = connection.channel()
    ch.confirm_delivery()
    try:
        yield ch
    finally:
        if ch.is_open:
            ch.close()


def _declared(connection: Any, name: str, declared: dict[str, Any]) -> bool:
    """Declare the queue; False when it exists with other arguments."""
    return _try(connection, 406, name, durable=True, arguments=declared) is not None


def _found(connection: Any, name: str) -> Any:
    """The queue's declare-ok, or None when it does not exist."""
    return _try(connection, 404, name, passive=True)


def _try(connection: Any, refused: int, name: str, **options: Any) -> Any:
    """``queue_declare`` on a channel of its own (a refusal closes it): the declare-ok, or None when
    RabbitMQ answers ``refused``."""
    ch = connection.channel()
    try:
        return ch.queue_declare(name, **options)
    except pika.exceptions.ChannelClosedByBroker as e:
        if e.reply_code != refused:
            raise
        return None
    finally:
        if ch.is_open:
            ch.close()


def _delete_empty(ch: Any, name: str) -> None:
    """Delete a queue just emptied (quorum queues know no ``if-empty`` delete: counted first)."""
    left = ch.queue_declare(name, passive=True).method.message_count
    if left:
        raise ConfigError(
            f"{name} received {left} message(s) while it was migrated: is a worker or the scheduler "
            "still running? Stop them and run `pulse queues migrate` again (nothing is lost)"
        )
    ch.queue_delete(name)


def _holding(queue_type: str) -> dict[str, Any]:
    return {"x-queue-type": QUORUM} if queue_type == QUORUM else {}


def _move(ch: Any, source: str, sink: str, *, rename: tuple[str, str] | None = None) -> int:
    """Move every message of ``source`` to ``sink``: each published, confirmed, then acked.
    ``rename`` (old, new): a dramatiq message whose queue name starts with old starts with new instead
    (``notifications.urgent.DQ`` becomes ``notifications.DQ``), so it goes on in its new queue."""
    count = 0
    for method, properties, body in _each(ch, source):
        if rename is not None:
            body = _renamed(body, *rename)
        ch.basic_publish(exchange="", routing_key=sink, body=body, properties=properties, mandatory=True)
        ch.basic_ack(method.delivery_tag)
        count += 1
    return count


def _each(ch: Any, name: str) -> Iterator[tuple[Any, Any, bytes]]:
    while True:
        method, properties, body = ch.basic_get(name, auto_ack=False)
        if method is None:
            return
        yield method, properties, body


def _renamed(body: bytes, old: str, new: str) -> bytes:
    try:
        message = json.loads(body)
    except ValueError:
        return body  # not a dramatiq message: moved as it is
    queue_name = message.get("queue_name") if isinstance(message, dict) else None
    if not isinstance(queue_name, str) or not queue_name.startswith(old):
        return body
    message["queue_name"] = new + queue_name[len(old) :]
    return json.dumps(message, separators=(",", ":")).encode()
