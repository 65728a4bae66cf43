"""The claim-and-send loop every recurring domain runs: uptime checks, metric polls, calculated
metrics and on-call escalations.

A loop runs as a chain of *legs*: messages that each run about a minute (`LEG_SECONDS`), claiming
rows a moment before they come due and sending each one's message at its time, waking for the
next due time. At its deadline a leg ends and sends the next leg. The deadline travels in the
message, so whatever runs a leg can die at any moment: RabbitMQ hands the unacknowledged leg to
another worker (or to the restarted one), which carries it on to the same deadline. A worker that
stops (SIGTERM) hands the rest of its leg on as a new message. Claims lock what they take
(``FOR UPDATE SKIP LOCKED``), so two legs at once never send one slot twice.

A leg takes a worker thread for its minute, so one loop runs one leg at a time (`Turn`): a leg
that finds another leg of its loop running ends at once, its thread free for checks. Each
minute a domain's tick (`schedules/`) sends a leg too: it ends at once while the chain runs, and
starts it again when it broke (a leg dead-lettered, RabbitMQ down when a leg sent the next, the
first tick of all). Two schedulers send two such legs; the second ends at once too.

A claim sends before it commits: a crash in between leaves the slots to claim again (a message
sent twice is recorded once, by its unique key), never a slot claimed but not sent.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import zlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import dramatiq
import peewee
import pika.exceptions
import psycopg

from pulse.config import get_settings
from pulse.db import CONNECT_TIMEOUT, db
from pulse.models import utcnow
from pulse.rabbitmq import PRIORITY_URGENT, BatchPublisher
from pulse.ticks import stopping

logger = logging.getLogger(__name__)

LEG_SECONDS = 60  # how long a leg runs before it sends the next
LEG_TIME_LIMIT = 120_000  # milliseconds: a leg, and a redelivered leg waiting its turn
# Send the messages due this close together in one RabbitMQ transaction (`Schedule.gather`): each
# commit costs the broker a disk sync, and 50 ms (against 20) took 2,000 checks every 20 s from 3.6
# to 3.0 ms of CPU each, p99 start lag 57 ms. Loops whose messages must leave on time keep this.
GATHER = timedelta(milliseconds=50)
CLAIM_AHEAD = timedelta(milliseconds=50)  # claimed this long before the gather opens, to be on time
LOOKAHEAD = GATHER + CLAIM_AHEAD  # how far ahead a loop with the default gather claims
BATCH_MAX = 16  # rows in one message of a loop that batches them (`Schedule.batch`)
IDLE_WAKE = 0.5  # seconds between claims when nothing is due sooner
PREPARE_EVERY = 5  # seconds between calls of `Schedule.prepare`
RETRY_WAIT = 1  # seconds between attempts while RabbitMQ or PostgreSQL is unreachable
SEND_NEXT_S = 30  # seconds a leg tries to send the next one (then the next tick starts the loop)
CONFIRM_S = 2.0  # seconds a leg waits on a copy of itself before ending (the copy may be dying)

#: (key, due time) of one claimed row: a component id and its slot, say.
Claimed = tuple[Any, datetime]


@dataclasses.dataclass(frozen=True)
class Schedule:
    """What a loop claims and what it sends.

    Parameters:
      name: the domain, for logs ("uptime").
      claim: ``claim(horizon)`` claims the rows due by ``horizon`` (a datetime), moving each to its
        next due time, inside the caller's transaction; returns their (key, due time).
      next_due: ``next_due()``, the earliest due time of any row, or None.
      message: ``message(key, due)``, the message to send for one claimed row.
      batch: ``batch(rows)``, one message for several claimed rows (at most `BATCH_MAX`) due
        together, or None to send a message per row.
      prepare: ``prepare(now)``, called every `PREPARE_EVERY` seconds before claiming (uptime
        gives new components their first slot), or None.
      gather: how long after a row is due the loop waits for others to send with it: one
        RabbitMQ transaction, and one batch message, for all the rows due within it. A message
        leaves up to this late, never early. Uptime gathers 200 ms, as its checks are many and
        batched; the others keep `GATHER`.
    """

    name: str
    claim: Callable[[datetime], Sequence[Claimed]]
    next_due: Callable[[], datetime | None]
    message: Callable[[Any, datetime], dramatiq.Message]
    prepare: Callable[[datetime], object] | None = None
    batch: Callable[[Sequence[Claimed]], dramatiq.Message] | None = None
    gather: timedelta = GATHER

    @property
    def lookahead(self) -> timedelta:
        """How far ahead the loop claims: the whole gather, and `CLAIM_AHEAD` to claim it in."""
        return self.gather + CLAIM_AHEAD

    def messages(self, rows: Sequence[Claimed]) -> list[dramatiq.Message]:
        """The messages for rows due together: one per row, or batches of nearly equal size."""
        if self.batch is None:
            return [self.message(key, due) for key, due in rows]
        count = -(-len(rows) // BATCH_MAX)
        return [self.batch(rows[i * len(rows) // count : (i + 1) * len(rows) // count]) for i in range(count)]


def start(leg: dramatiq.Actor) -> None:
    """Send a leg of a loop (``leg`` takes the deadline, epoch seconds): from a tick, to start the
    loop or start it again (the leg ends at once while another runs)."""
    leg.send_with_options(args=(time.time() + LEG_SECONDS,), broker_priority=PRIORITY_URGENT)


class _StoppingError(Exception):
    """The worker is shutting down: undo the claim in progress."""


def run(schedule: Schedule, until: float, leg: dramatiq.Actor) -> int:
    """Claim and send until ``until`` (epoch seconds) or until this worker stops, then send the
    next leg: the rest of this one if the worker stopped before ``until``, else the next
    minute's. Returns how many messages were sent.

    RabbitMQ and PostgreSQL errors are ridden out: the claim in progress is rolled back (its rows
    wait for the next attempt) and the loop tries again after `RETRY_WAIT`.
    """
    with Turn(schedule.name, until) as turn:
        sent = _run(schedule, until) if turn.taken else 0
    if turn.held:  # sent once the turn is free (a leg without its turn leaves the chain to the ticks)
        _send_next(schedule, until, leg)
    return sent


def _send_next(schedule: Schedule, until: float, leg: dramatiq.Actor) -> None:
    """Send the next leg, trying again each `RETRY_WAIT` while RabbitMQ is away, for up to
    `SEND_NEXT_S`: the loop goes on by itself after an outage that short."""
    next_until = until if stopping.is_set() and time.time() < until else time.time() + LEG_SECONDS
    give_up = time.monotonic() + SEND_NEXT_S
    while True:
        try:
            leg.send_with_options(args=(next_until,), broker_priority=PRIORITY_URGENT)
            return
        except (dramatiq.errors.BrokerConnectionError, pika.exceptions.AMQPError) as e:
            if time.monotonic() >= give_up or stopping.wait(RETRY_WAIT):
                logger.warning("%s loop: could not send the next leg (%s): the next tick starts the loop again.",
                               schedule.name, type(e).__name__)  # fmt: skip
                return
            logger.warning("%s loop: could not send the next leg (%s): trying again in %d s.",
                           schedule.name, type(e).__name__, RETRY_WAIT)  # fmt: skip


def _run(schedule: Schedule, until: float) -> int:
    deadline = time.monotonic() + (until - time.time())
    logger.info("%s loop: running until %s.", schedule.name, datetime.fromtimestamp(until, UTC).isoformat())
    next_prepare = 0.0
    sent = 0
    publisher = BatchPublisher(get_settings())
    try:
        while time.monotonic() < deadline and not stopping.is_set():
            try:
                if schedule.prepare is not None and time.monotonic() >= next_prepare:
                    schedule.prepare(utcnow())
                    next_prepare = time.monotonic() + PREPARE_EVERY
                sent += _claim_and_send(schedule, publisher)
                stopping.wait(_until_next_due(schedule, deadline))
            except (pika.exceptions.AMQPError, peewee.OperationalError, peewee.InterfaceError) as e:
                logger.warning("%s loop: %s: trying again in %d s.", schedule.name, type(e).__name__, RETRY_WAIT)
                if not db.is_closed():
                    db.close()  # a broken connection leaves the pool; the next query opens a new one
                stopping.wait(RETRY_WAIT)
    except _StoppingError:
        pass
    finally:
        publisher.close()
    logger.info("%s loop sent %d message(s).", schedule.name, sent)
    return sent


def _claim_and_send(schedule: Schedule, publisher: BatchPublisher) -> int:
    """Claim what is due within the schedule's lookahead and send it as it comes due: its gather
    after the first unsent one is due, all those due by then, in one RabbitMQ transaction (each
    commit costs the broker a disk sync, so a message may leave up to a gather late but never
    early)."""
    with db.atomic():
        claimed = sorted(schedule.claim(utcnow() + schedule.lookahead), key=lambda row: row[1])
        position = 0
        while position < len(claimed):
            wait = (claimed[position][1] + schedule.gather - utcnow()).total_seconds()
            if wait > 0 and stopping.wait(wait):
                raise _StoppingError
            now = utcnow()
            batch = [row for row in claimed[position:] if row[1] <= now]
            publisher.publish(schedule.messages(batch))
            position += len(batch)
    return len(claimed)


def _until_next_due(schedule: Schedule, deadline: float) -> float:
    """Seconds to sleep before the next claim: until a moment before the next row is due."""
    due = schedule.next_due()
    wait = IDLE_WAKE if due is None else (due - utcnow() - schedule.lookahead).total_seconds()
    return max(0.0, min(wait, IDLE_WAKE, deadline - time.monotonic()))


class Turn:
    """A loop's turn to run a leg: a PostgreSQL advisory lock per loop, held on a connection of
    the leg's own (not a pooled one, which would keep the lock after the leg) named after the
    leg's deadline, so a leg that finds the lock taken can tell a copy of itself from another leg.
    A leg that dies, dies with its connection, and its lock with it.

    ``with Turn(name, until) as turn:`` sets ``turn.taken``: the leg runs, because the lock is its
    own (``turn.held``) or because PostgreSQL could not be asked (claims never double a slot, the
    lock only saves a thread). It is not taken when another leg holds the lock (it ends at once),
    when a leg with the same deadline holds it (a copy: this one ends after `CONFIRM_S`, in case
    that copy is dying), or when the worker stops or the deadline passes meanwhile.
    """

    NAMESPACE = 0x50554C53  # "PULS": the first key of Pulse's advisory locks
    _HOLDER = """
        SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s::oid AND l.objid = %s::oid
          AND l.objsubid = 2 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    """

    def __init__(self, name: str, until: float) -> None:
        self.name, self.until = name, until
        self.key = zlib.crc32(name.encode()) & 0x7FFFFFFF
        self.taken = self.held = False
        self.conn: psycopg.Connection | None = None

    def __enter__(self) -> Turn:
        try:
            self.taken = self.held = self._take()
        except psycopg.Error as e:
            logger.warning("%s loop: PostgreSQL: %s: the leg runs without its turn.", self.name, type(e).__name__)
            self.taken = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self.conn is not None:
            self.conn.close()  # and the lock with it

    def _take(self) -> bool:
        self.conn = psycopg.connect(
            get_settings().database_url,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT,
            application_name=f"pulse {self.name} loop until {self.until:.3f}",
        )
        copy_since: float | None = None
        while True:
            if self._query("SELECT pg_try_advisory_lock(%s, %s)"):
                return True
            holder = self._holder_until()
            if holder is not None and abs(holder - self.until) >= 1:
                logger.info("%s loop: another leg runs: this one ends.", self.name)
                return False
            if holder is not None:
                copy_since = time.monotonic() if copy_since is None else copy_since
                if time.monotonic() - copy_since >= CONFIRM_S:
                    logger.info("%s loop: a leg running until the same time runs already: this copy ends.", self.name)
                    return False
            if time.time() >= self.until or stopping.wait(IDLE_WAKE / 5):
                return False

    def _holder_until(self) -> float | None:
        """The deadline of the leg holding the lock, from its connection's name."""
        name = self._query(self._HOLDER)
        try:
            return float(name.rsplit(" ", 1)[1]) if name else None
        except (IndexError, ValueError):
            return None

    def _query(self, text: str) -> Any:
        """The first column of the first row of ``text`` about this loop's lock (None if no row)."""
        assert self.conn is not None
        row = self.conn.execute(text, (self.NAMESPACE, self.key)).fetchone()
        return row[0] if row else None
