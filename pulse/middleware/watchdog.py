"""A hard time limit: a message still running a grace period after its time limit has its worker
process replaced.

dramatiq's time limit (`pulse.middleware.time_limit`) raises an exception into the message's
thread, which code running in C (a regular expression, a large parse) does not see until it
returns. Such a message can hold its thread, and with the GIL every thread of its process, for as
long as it likes: the other messages of the process stop, RabbitMQ's heartbeats go unanswered.

So each worker process writes, in a small file shared with one watchdog process (a dramatiq fork,
outside the workers' GIL), the message each of its threads is running and when that message's time
is up. The watchdog reads the files every second. A message still running `grace_s` after its
time is up is logged (message id, actor, queue, how late), counted in PostgreSQL, and its worker
process is killed. dramatiq then stops its other processes and exits, and the supervisor (compose's
``restart:``, systemd) starts it again; RabbitMQ gives what the killed process held to the other
workers. A message killed more times than its retries allow is dead-lettered when it comes back,
without running again.
"""

from __future__ import annotations

import logging
import mmap
import os
import signal
import struct
import threading
import time
from typing import Any

import dramatiq
import peewee
import psycopg
from dramatiq.middleware import MiddlewareError

from pulse.config import Settings, get_settings
from pulse.db import db
from pulse.errors import PermanentError
from pulse.middleware.retries import max_retries
from pulse.runs import alive, run_directory

logger = logging.getLogger(__name__)

# One entry per worker thread: when the message's time is up (time.monotonic(), the same clock in
# every process of the machine; 0 for a free one), then its id, actor and queue.
ENTRY = struct.Struct("<d40s64s48s")
SCAN_EVERY = 1.0  # seconds

COUNT = """
INSERT INTO runaway_message AS r (message_id, actor_name, queue_name, kills, last_killed_at)
VALUES (%s, %s, %s, 1, now())
ON CONFLICT (message_id) DO UPDATE SET kills = r.kills + 1, last_killed_at = now()
"""
KILLS = "SELECT kills FROM runaway_message WHERE message_id = %s"


class RunawayError(PermanentError, MiddlewareError):
    """The message ran past its hard time limit as often as its retries allow: it is dead-lettered.
    (A `MiddlewareError`, so that dramatiq lets it out of `before_process_message` and fails the
    message with it; a `PermanentError`, so that it is not retried.)"""


def entries_directory(settings: Settings) -> str:
    """Where the worker processes of this dramatiq run and its watchdog share their entries."""
    return os.path.join(run_directory(settings.metrics_dir), "watchdog")


class Watchdog(dramatiq.Middleware):
    """Replaces a worker process whose message outlives its time limit by ``grace_s`` seconds (see
    the module's docstring), and dead-letters a message that was killed more often than its
    retries allow.

    Parameters:
      settings(Settings): where the database and the run's shared directory are.
      time_limit(int): the default time limit of an actor, in milliseconds.
      grace_s(float): seconds past a message's time limit before its process is replaced.
    """

    def __init__(self, *, settings: Settings, time_limit: int, grace_s: float) -> None:
        self.settings = settings
        self.time_limit = time_limit
        self.grace_s = grace_s
        self.entries: mmap.mmap | None = None
        self.entry = threading.local()
        self.capacity = self.taken = 0
        self.lock = threading.Lock()

    @property
    def forks(self) -> list[Any]:
        return [watch]

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        directory = entries_directory(self.settings)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"{os.getpid()}.entries")
        with open(path, "wb+") as file:
            file.truncate(ENTRY.size * worker.worker_threads)
            self.entries = mmap.mmap(file.fileno(), 0)
        self.capacity, self.taken = worker.worker_threads, 0

    def before_process_message(self, broker: dramatiq.Broker, message: Any) -> None:
        if getattr(message, "redelivered", False) and not self.settings.location:  # a location has no database
            self._refuse_a_runaway(broker, message)
        index = self._index()
        if index is None:
            return
        actor = broker.get_actor(message.actor_name)
        limit = message.options.get("time_limit") or actor.options.get("time_limit", self.time_limit)
        ENTRY.pack_into(
            self.entries,  # type: ignore[arg-type]
            index * ENTRY.size,
            time.monotonic() + limit / 1000,
            message.message_id.encode()[:40],
            message.actor_name.encode()[:64],
            message.queue_name.encode()[:48],
        )

    def after_process_message(
        self, broker: dramatiq.Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        self._free()

    def after_skip_message(self, broker: dramatiq.Broker, message: Any) -> None:
        self._free()

    def _index(self) -> int | None:
        """This thread's entry (None in a process this middleware did not boot, or past its threads)."""
        index = getattr(self.entry, "index", None)
        if index is None and self.entries is not None:
            with self.lock:
                if self.taken < self.capacity:
                    index = self.entry.index = self.taken
                    self.taken += 1
        return index

    def _free(self) -> None:
        index = getattr(self.entry, "index", None)
        if index is not None and self.entries is not None:
            struct.pack_into("<d", self.entries, index * ENTRY.size, 0.0)

    def _refuse_a_runaway(self, broker: dramatiq.Broker, message: Any) -> None:
        """A redelivered message that was killed as often as its retries allow fails for good now."""
        try:
            row = db.execute_sql(KILLS, (message.message_id,)).fetchone()
        except (peewee.OperationalError, peewee.InterfaceError):
            return  # the database cannot tell: the message runs (its own queries will meet the outage)
        kills = row[0] if row else 0
        if kills and kills > max_retries(broker, message) - message.options.get("retries", 0):
            message.options["retries"] = message.options.get("retries", 0) + kills - 1  # attempts, when recorded
            raise RunawayError(
                f"ran past its time limit and {self.grace_s:g} s of grace {kills} time(s): its worker process was "
                "replaced each time"
            )


def watch() -> int:
    """The watchdog (a dramatiq fork process): every `SCAN_EVERY` seconds, replace the worker
    processes whose message is `grace_s` past its time limit."""
    settings = get_settings()
    directory = entries_directory(settings)
    os.makedirs(directory, exist_ok=True)
    suspects: set[tuple[int, bytes, float]] = set()
    while True:
        try:
            suspects = _scan(settings, directory, suspects)
        except Exception:
            logger.exception("The watchdog's scan failed; it scans again in %.0f s.", SCAN_EVERY)
        time.sleep(SCAN_EVERY)


def _scan(settings: Settings, directory: str, suspects: set[tuple[int, bytes, float]]) -> set[tuple[int, bytes, float]]:
    """Replace the processes overdue in this scan and the last; return this scan's overdue ones."""
    now = time.monotonic()
    seen = set()
    for pid, entry in _running(directory):
        deadline, message_id, actor, queue = ENTRY.unpack(entry)
        if deadline and now > deadline + settings.time_limit_grace_s:
            key = (pid, message_id, deadline)
            seen.add(key)
            if key in suspects:  # overdue in two scans in a row: not an entry half written
                _replace(settings, pid, now - deadline, *(_text(b) for b in (message_id, actor, queue)))
    return seen


def _running(directory: str) -> list[tuple[int, bytes]]:
    """The entries of every live worker process; the files of dead ones are removed."""
    found: list[tuple[int, bytes]] = []
    for name in os.listdir(directory):
        stem = name.removesuffix(".entries")
        pid = int(stem) if stem != name and stem.isdigit() else None
        if pid is None:
            continue
        path = os.path.join(directory, name)
        if not alive(pid):
            os.unlink(path)
            continue
        try:
            with open(path, "rb") as file:
                data = file.read()
        except FileNotFoundError:
            continue
        found.extend((pid, data[i : i + ENTRY.size]) for i in range(0, len(data) - ENTRY.size + 1, ENTRY.size))
    return found


def _text(field: bytes) -> str:
    return field.rstrip(b"\0").decode("utf-8", "replace")


def _replace(settings: Settings, pid: int, late: float, message_id: str, actor: str, queue: str) -> None:
    logger.error(
        "Message %s (%s on %s) is %.0f s past its time limit, stuck where the time limit cannot interrupt it: "
        "replacing worker process %d; RabbitMQ gives its messages to the other workers.",
        message_id,
        actor,
        queue,
        late,
        pid,
    )
    try:
        if not settings.location:  # a location's worker has no database: its batches are not retried anyway
            with psycopg.connect(settings.database_url, autocommit=True, connect_timeout=5) as conn:
                conn.execute(COUNT, (message_id, actor, queue))
    except psycopg.Error as e:
        logger.warning(
            "Could not count the kill of message %s (%s): it may run once more.", message_id, type(e).__name__
        )
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
