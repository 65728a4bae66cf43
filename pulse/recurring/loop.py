"""The claim-and-send loops every recurring domain runs: uptime checks, metric polls, calculated
metrics and on-call escalations.

A loop claims rows a moment before they come due (or, not claiming ahead, as they do) and sends
each one's message at its time, waking for the next due time. It runs in a thread of its own
(`Runner`), one per loop in every worker process that consumes the loop's queue
(`pulse.middleware.loops`), beside dramatiq's worker threads: a loop never holds a worker thread,
so any ``--threads``, 1 included, runs every loop and every message.

Of all the runners of a loop, in every process on every host, the one holding the loop's *turn*
runs it: a PostgreSQL advisory lock, held on a connection of the process's own (`Turns`). The
others try to take it every `TAKE_EVERY_S` seconds. A process that dies, dies with its connection
and its locks, so another process carries the loop on within about a second; a process that stops
(SIGTERM) gives its turns up as it stops. Claims lock what they take (``FOR UPDATE SKIP LOCKED``),
so even two runners at once (a turn lost with its connection while its holder still runs, for at
most `CHECK_EVERY_S`) never send one slot twice.

A claim sends before it commits: a crash in between leaves the slots to claim again (a message
sent twice is recorded once, by its unique key), never a slot claimed but not sent, unless the loop
skips it on purpose: a loop whose work goes stale (checks, polls) sends nothing while its queue
holds more than ``PULSE_BACKLOG_BOUND`` messages waiting (`Loop.bounded`). A check that would
wait behind such a backlog is worth less than the next one, which comes one interval later; a
backlog that grew without bound would end in RabbitMQ's memory alarm, which blocks every publisher,
notifications included. Skipped slots are counted (``loop_slots_skipped_total``) and leave no check:
the sweep of the slots nobody checked records them as unknown (`pulse.uptime.missed`), neither up
nor down. A loop whose queue an operator paused (`pulse.pause`)
claims nothing: when the queue resumes, each row's latest slot is sent, once (one check per
component however long the pause; the slots between are skipped), as after a stop of every worker.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

import dramatiq
import peewee
import pika.exceptions
import psycopg

from pulse import pause
from pulse.config import get_settings
from pulse.db import CONNECT_TIMEOUT, db
from pulse.models import utcnow
from pulse.rabbitmq.publish import BatchPublisher
from pulse.telemetry.counters import slots_skipped

logger = logging.getLogger(__name__)

# Send the messages due this close together in one RabbitMQ transaction (`Loop.gather`): each
# commit costs the broker a disk sync (the figures: docs/performance.md). Loops whose messages must
# leave on time keep this.
GATHER = timedelta(milliseconds=50)
CLAIM_AHEAD = timedelta(milliseconds=50)  # claimed this long before the gather opens, to be on time
BATCH_MAX = 16  # rows in one message of a loop that batches them (`Loop.batch`), unless it says otherwise
IDLE_WAKE_S = 0.5  # seconds between claims when nothing is due sooner
PREPARE_EVERY_S = 5  # seconds between calls of `Loop.prepare`
RETRY_WAIT_S = 1  # seconds between attempts while RabbitMQ or PostgreSQL is unreachable
TAKE_EVERY_S = 1.0  # seconds between a waiting runner's attempts to take its loop's turn
CHECK_EVERY_S = 5.0  # seconds between a running runner's checks that its turn's connection lives
BACKLOG_EVERY_S = 1.0  # seconds between a bounded loop's readings of its queue's backlog

#: (key, due time) of one claimed row: a component id and its slot, say.
Claimed = tuple[Any, datetime]


@dataclasses.dataclass(frozen=True)
class Loop:
    """What a loop claims and what it sends.

    Parameters:
      name: the loop's name ("uptime"): its turn, its log lines and its telemetry.
      queue: the queue whose worker processes run the loop, and which its pause and backlog are
        read from; its name when not given (a queue with a second loop names it: "heartbeat
        monitors" on "uptime").
      claim: ``claim(horizon)`` claims the rows due by ``horizon`` (a datetime), moving each to its
        next due time, inside the caller's transaction; returns their (key, due time).
      next_due: ``next_due()``, the earliest due time of any row, or None.
      message: ``message(key, due)``, the message to send for one claimed row.
      batch: ``batch(rows)``, one message for several claimed rows (at most its `batch_max`) due
        together, or None to send a message per row.
      batch_max: the most rows in one batch message.
      prepare: ``prepare(now)``, called every `PREPARE_EVERY_S` seconds before claiming (uptime
        gives new components their first slot), or None.
      gather: how long after a row is due the loop waits for others to send with it: one
        RabbitMQ transaction, and one batch message, for all the rows due within it. A message
        leaves up to this late (less its `lead`). Uptime gathers 500 ms and metrics 200 ms, as
        their checks and polls are many and batched, and on-call escalations 500 ms; the others
        keep `GATHER`.
      lead: how long before the end of its gather a message leaves: a lead longer than the gather
        sends a message before any of its rows is due, as uptime's does (its worker starts each
        check at its own slot, so gathering makes no check late). Nothing by default: a message
        leaves at the end of its gather, once all its rows are due.
      bounded: skip, rather than send, the rows coming due while the loop's queue holds more than
        ``PULSE_BACKLOG_BOUND`` messages waiting (their work would be stale when a worker took
        it). For checks and polls; never for escalations.
      ahead: claim rows before they are due, by the `lookahead`, so that they leave on time. False:
        claim only what is due, as calculated metrics do (a claim holds their dependents back, and a
        source's mark waits for its row locks, so it is made as late and held as briefly as can be).
    """

    name: str
    claim: Callable[[datetime], Sequence[Claimed]]
    next_due: Callable[[], datetime | None]
    message: Callable[[Any, datetime], dramatiq.Message]
    prepare: Callable[[datetime], object] | None = None
    batch: Callable[[Sequence[Claimed]], dramatiq.Message] | None = None
    gather: timedelta = GATHER
    lead: timedelta = timedelta(0)
    batch_max: int = BATCH_MAX
    bounded: bool = False
    ahead: bool = True
    queue: str = ""

    @property
    def queue_name(self) -> str:
        """The queue the loop belongs to."""
        return self.queue or self.name

    @property
    def lookahead(self) -> timedelta:
        """How far ahead the loop claims: its lead, the whole gather, and `CLAIM_AHEAD` to claim
        it in (nothing when it claims only what is due)."""
        return self.lead + self.gather + CLAIM_AHEAD if self.ahead else timedelta(0)

    def messages(self, rows: Sequence[Claimed]) -> list[dramatiq.Message]:
        """The messages for rows due together: one per row, or batches of nearly equal size."""
        if self.batch is None:
            return [self.message(key, due) for key, due in rows]
        count = -(-len(rows) // self.batch_max)
        return [self.batch(rows[i * len(rows) // count : (i + 1) * len(rows) // count]) for i in range(count)]


#: The declared loops, by name: each worker process runs those of the queues it consumes.
LOOPS: dict[str, Loop] = {}


def declare(loop: Loop) -> Loop:
    """Declare a loop (`schedules/`): every worker process consuming its queue runs it, one process
    at a time."""
    LOOPS[loop.name] = loop
    return loop


class Turns:
    """This process's turns to run loops: PostgreSQL advisory locks, one per loop, on one
    connection of the process's own (not a pooled one, which would hand its locks on with it),
    named ``pulse loops <host> <pid>`` so that ``pg_stat_activity`` shows where each loop runs.

    A connection that breaks loses every lock on it (PostgreSQL ends the session); the next call
    raises and the runners take their turns again. The connection asks PostgreSQL to probe an
    idle client every 10 s, so a host cut off from the network frees its turns within about
    half a minute instead of two hours (the kernel's default), and bounds its own wait for an
    answer to 30 s.

    Parameters:
      database_url: where PostgreSQL is.
    """

    NAMESPACE = 0x50554C53  # "PULS": the first key of Pulse's advisory locks
    _KEEPALIVE = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self._guard = threading.Lock()  # the runners of one process share the connection
        self._conn: psycopg.Connection | None = None
        self._held: set[int] = set()
        self._checked = 0.0

    @staticmethod
    def key(name: str) -> int:
        return zlib.crc32(name.encode()) & 0x7FFFFFFF

    def take(self, name: str) -> bool:
        """Whether the loop is this process's to run: its turn held already (the connection
        checked every `CHECK_EVERY_S`), or free and taken now. Raises `psycopg.Error` when
        PostgreSQL does not answer (and every turn of this process is then lost)."""
        key = self.key(name)
        with self._guard:
            try:
                conn = self._connection()
                if key in self._held:
                    if time.monotonic() - self._checked >= CHECK_EVERY_S:
                        conn.execute("SELECT 1")
                        self._checked = time.monotonic()
                    return True
                if conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (self.NAMESPACE, key)).fetchone() == (True,):
                    self._held.add(key)
                    return True
                return False
            except psycopg.Error:
                self._drop()
                raise

    def holds(self, name: str) -> bool:
        """Whether this process held the loop's turn at its last word with PostgreSQL."""
        return self.key(name) in self._held

    def give_up(self, name: str) -> None:
        """Let another process take the loop now (best effort: a broken connection frees it too)."""
        key = self.key(name)
        with self._guard:
            if key not in self._held or self._conn is None:
                return
            self._held.discard(key)
            try:
                self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", (self.NAMESPACE, key))
            except psycopg.Error:
                self._drop()

    def close(self) -> None:
        """Give every turn up."""
        with self._guard:
            self._drop()

    def _connection(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._held.clear()
            self._conn = psycopg.connect(
                self.database_url,
                autocommit=True,
                connect_timeout=CONNECT_TIMEOUT,
                application_name=f"pulse loops {socket.gethostname()} {os.getpid()}",
                options=self._KEEPALIVE,
                tcp_user_timeout=30_000,
            )
            self._checked = time.monotonic()
        return self._conn

    def _drop(self) -> None:
        self._held.clear()
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class Publisher(Protocol):
    def publish(self, messages: Sequence[dramatiq.Message]) -> None: ...
    def waiting(self, queue_name: str) -> int: ...
    def idle(self) -> None: ...
    def close(self) -> None: ...


class _StoppingError(Exception):
    """The process is stopping: undo the claim in progress."""


class Runner:
    """Runs one loop in this process while the loop's turn is this process's: `step` after step
    until ``stop`` is set, then gives the turn up.

    RabbitMQ and PostgreSQL errors are ridden out: the claim in progress is rolled back (its rows
    wait for the next attempt), one warning says so, and the runner tries again every
    `RETRY_WAIT_S` until it works (one line says that too).

    Parameters:
      loop: what the loop claims and sends.
      turns: this process's `Turns`.
      stop: set when the process stops.
      publisher: where messages go (a `BatchPublisher` to the settings' broker by default).
    """

    def __init__(self, loop: Loop, turns: Turns, stop: threading.Event, publisher: Publisher | None = None) -> None:
        self.loop, self.turns, self.stop = loop, turns, stop
        settings = get_settings()
        self.publisher = publisher if publisher is not None else BatchPublisher(settings)
        self.bound = settings.backlog_bound if loop.bounded else 0
        self.running = False  # whether the turn is this process's
        self.sent = self.skipped = 0  # claimed rows sent, and skipped
        self._backlog: tuple[float, bool] = (0.0, False)  # (when read, over the bound)
        self._skipping_since = 0  # `skipped` when the loop began to skip
        self._was_paused = False
        self._next_prepare = 0.0
        self._failing_since: float | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.stop.wait(self.step())
        except Exception:  # a bug: say so, and let another process take the loop
            logger.exception("%s loop: stopped in this process by an unexpected error.", self.loop.name)
        finally:
            self._leave()

    def step(self) -> float:
        """Take the loop's turn if it is free and, holding it, claim and send what is due.
        Returns the seconds to wait before the next step."""
        try:
            if not self._turn() or self._paused():
                wait = TAKE_EVERY_S
            else:
                if self.loop.prepare is not None and time.monotonic() >= self._next_prepare:
                    self.loop.prepare(utcnow())
                    self._next_prepare = time.monotonic() + PREPARE_EVERY_S
                self.claim_and_send()
                self.publisher.idle()
                wait = self._until_next_due()
        except _StoppingError:
            return 0.0
        except (pika.exceptions.AMQPError, peewee.OperationalError, peewee.InterfaceError, psycopg.Error) as e:
            self._failed(e)
            return RETRY_WAIT_S
        if self._failing_since is not None:
            failed_for = time.monotonic() - self._failing_since
            logger.info("%s loop: working again after %.0f s.", self.loop.name, failed_for)
            self._failing_since = None
        return wait

    def claim_and_send(self) -> int:
        """Claim what is due within the loop's lookahead and send it as it comes due: its
        gather after the first unsent one is due (less its lead), all those due by then (plus its
        lead), in one RabbitMQ transaction (each commit costs the broker a disk sync, so a message
        may leave up to a gather late but never earlier than its lead). Returns how many rows were
        claimed."""
        loop = self.loop
        with db.atomic():
            claimed = sorted(loop.claim(utcnow() + loop.lookahead), key=lambda row: row[1])
            position = 0
            while position < len(claimed):
                wait = (claimed[position][1] + loop.gather - loop.lead - utcnow()).total_seconds()
                if wait > 0 and self.stop.wait(wait):
                    raise _StoppingError
                horizon = utcnow() + loop.lead
                batch = [row for row in claimed[position:] if row[1] <= horizon]
                if self._backlogged():
                    self.skipped += len(batch)
                    slots_skipped(loop.name, len(batch))
                else:
                    self.publisher.publish(loop.messages(batch))
                    self.sent += len(batch)
                position += len(batch)
        return len(claimed)

    def _paused(self) -> bool:
        """Whether the loop's queue is paused (`pulse.pause`); one line when that starts, one when it ends."""
        name, queue = self.loop.name, self.loop.queue_name
        paused = pause.is_paused(queue)
        if paused != self._was_paused:
            if paused:
                logger.info("%s loop: %r is paused: nothing is claimed or sent until it resumes.", name, queue)
            else:
                logger.info("%s loop: %r resumed: each row's latest slot due is sent now.", name, queue)
            self._was_paused = paused
        return paused

    def _backlogged(self) -> bool:
        """Whether the loop's queue holds more than its bound of messages waiting (read every
        `BACKLOG_EVERY_S`); one line when it goes over, one when it comes back under."""
        read_at, over = self._backlog
        if not self.bound or time.monotonic() - read_at < BACKLOG_EVERY_S:
            return over
        name, queue = self.loop.name, self.loop.queue_name
        waiting = self.publisher.waiting(queue)
        if waiting > self.bound and not over:
            self._skipping_since = self.skipped
            logger.warning(
                "%s loop: %d messages wait in %r, more than PULSE_BACKLOG_BOUND (%d): what comes due is "
                "skipped, not sent, until fewer wait.", name, waiting, queue, self.bound,
            )  # fmt: skip
        elif waiting <= self.bound and over:
            logger.info("%s loop: %r is back under its bound: %d slot(s) skipped.", name, queue,
                        self.skipped - self._skipping_since)  # fmt: skip
        self._backlog = (time.monotonic(), waiting > self.bound)
        return self._backlog[1]

    def _turn(self) -> bool:
        held = self.turns.take(self.loop.name)
        if held and not self.running:
            logger.info("%s loop: running in this process.", self.loop.name)
        self.running = held
        return held

    def _until_next_due(self) -> float:
        """Seconds to sleep before the next claim: until a moment before the next row is due."""
        due = self.loop.next_due()
        wait = IDLE_WAKE_S if due is None else (due - utcnow() - self.loop.lookahead).total_seconds()
        return max(0.0, min(wait, IDLE_WAKE_S))

    def _failed(self, error: Exception) -> None:
        """Forget what a failure may have broken (the publisher drops a broken connection itself);
        warn once per run of failures."""
        if not db.is_closed():
            db.close()  # a broken connection leaves the pool; the next query opens a new one
        self.running = self.turns.holds(self.loop.name)  # lost with the connection, if that broke
        if self._failing_since is None:
            self._failing_since = time.monotonic()
            name = self.loop.name
            logger.warning("%s loop: %s: trying again every %d s.", name, type(error).__name__, RETRY_WAIT_S)

    def _leave(self) -> None:
        self.publisher.close()
        if not db.is_closed():
            db.close()
        if self.running:
            self.turns.give_up(self.loop.name)
            name = self.loop.name
            logger.info("%s loop: stopped in this process, %d slot(s) sent, %d skipped.", name, self.sent, self.skipped)
        self.running = False
