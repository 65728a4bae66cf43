"""Queues paused by an operator: ``pulse queues pause uptime`` stops every worker of the fleet
taking messages from ``uptime`` (and its urgent twin) without stopping a process, until ``pulse
queues resume uptime``.

The pause lives in PostgreSQL (``paused_queue``), so it holds for every worker and across restarts.
Each worker process reads it every couple of seconds (`pulse.middleware.beat`) into `paused`,
which its consumers (`pulse.rabbitmq.broker.PulseConsumer`) and its loops (`pulse.recurring.loop.Runner`) look at:
a paused consumer cancels its subscription (RabbitMQ takes back what it had sent but dramatiq had
not taken) while the messages already in the process finish and are acked; a paused loop skips
what comes due, as it does over its backlog bound. Delayed retries (``.DQ``) keep coming due into
their queue, where they wait.
"""

from __future__ import annotations

from pulse.db import db
from pulse.rabbitmq import QUEUES, URGENT

#: The queues paused when this process last read them (replaced whole, never changed in place).
paused: frozenset[str] = frozenset()


def is_paused(queue_name: str) -> bool:
    """Whether a queue (or the queue whose urgent twin it is) is paused, as this process last read."""
    return queue_name.removesuffix(URGENT) in paused


def read() -> frozenset[str]:
    """Read the paused queues from the database into `paused`, and return them."""
    global paused
    rows = db.execute_sql("SELECT queue_name FROM paused_queue").fetchall()
    paused = frozenset(name for (name,) in rows)
    return paused


def pause(queue_name: str) -> bool:
    """Pause a queue; False when it was paused already. Raises ValueError for an unknown queue."""
    _known(queue_name)
    cursor = db.execute_sql(
        "INSERT INTO paused_queue (queue_name) VALUES (%s) ON CONFLICT (queue_name) DO NOTHING", (queue_name,)
    )
    return cursor.rowcount == 1


def resume(queue_name: str) -> bool:
    """Resume a paused queue; False when it was not paused. Raises ValueError for an unknown queue."""
    _known(queue_name)
    return db.execute_sql("DELETE FROM paused_queue WHERE queue_name = %s", (queue_name,)).rowcount == 1


def _known(queue_name: str) -> None:
    if queue_name not in QUEUES:
        raise ValueError(f"no queue {queue_name!r}: Pulse's queues are {', '.join(QUEUES)}")
