"""Each worker process's own heartbeat, for `pulse health` run beside it (the container's health
check), and the queues an operator paused (`pulse.pause`), read as it beats.

Every `BEAT_EVERY` seconds a thread of the worker process writes a small JSON file in the run's
directory (``beats/<pid>.json``): when, its threads and the messages they run (since when, until
when their time is up), whether each of its consumers still runs, the paused queues it consumes,
and how many messages it has completed. The thread needs the GIL like every other: a process held
by a message stuck in C stops beating, and one whose threads are all stuck says so in its file.
`pulse.health.probe_workers` reads the files.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from typing import Any

import dramatiq
import peewee
from dramatiq.brokers.rabbitmq import RabbitmqBroker

from pulse import pause
from pulse.config import Settings
from pulse.db import db
from pulse.rabbitmq import URGENT
from pulse.runs import run_directory

logger = logging.getLogger(__name__)

BEAT_EVERY = 2.0  # seconds


def beats_directory(metrics_dir: str, run: str | None = None) -> str:
    """Where the worker processes of a run (this process's by default) write their beats."""
    return os.path.join(run or run_directory(metrics_dir), "beats")


class Beat(dramatiq.Middleware):
    """Writes this worker process's heartbeat and reads the paused queues (see the module's
    docstring). Only in worker processes on RabbitMQ.

    Parameters:
      settings(Settings): where the run's directory and PostgreSQL are, and the default time limit.
    """

    def __init__(self, *, settings: Settings) -> None:
        self.settings = settings
        self.running: dict[int, dict[str, Any]] = {}  # thread id -> the message it runs
        self.completed = 0
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.path: str | None = None
        self.unread_since: float | None = None  # when reading the paused queues began to fail

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        if not isinstance(broker, RabbitmqBroker):
            return
        directory = beats_directory(self.settings.metrics_dir)
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(directory, f"{os.getpid()}.json")
        self.stop.clear()
        self.thread = threading.Thread(target=self._beat, args=(worker,), name="beat", daemon=True)
        self.thread.start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(BEAT_EVERY + 1)
        if self.path is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def before_process_message(self, broker: dramatiq.Broker, message: Any) -> None:
        actor = broker.actors.get(message.actor_name)
        limit = message.options.get("time_limit") or (actor.options.get("time_limit") if actor else None)
        now = time.time()
        self.running[threading.get_ident()] = {
            "actor": message.actor_name,
            "queue": message.queue_name,
            "since": now,
            "until": now + (limit / 1000 if limit else self.settings.time_limit_s),
        }

    def after_process_message(
        self, broker: dramatiq.Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        self.running.pop(threading.get_ident(), None)
        if exception is None:
            self.completed += 1

    def after_skip_message(self, broker: dramatiq.Broker, message: Any) -> None:
        self.running.pop(threading.get_ident(), None)

    def _beat(self, worker: dramatiq.Worker) -> None:
        while not self.stop.is_set():
            if not self.settings.location:  # a location's worker has no database: nothing pauses it
                self._read_paused()
            try:
                self._write(worker)
            except OSError as e:
                logger.warning("Could not write this process's heartbeat (%s): trying again in %.0f s.", e, BEAT_EVERY)
            self.stop.wait(BEAT_EVERY)

    def _read_paused(self) -> None:
        """Read the paused queues; while the database does not answer, keep the last known (one
        line when that starts, one when it ends)."""
        try:
            with db.connection_context():
                pause.read()
        except (peewee.OperationalError, peewee.InterfaceError, peewee.ProgrammingError) as e:
            if self.unread_since is None:
                self.unread_since = time.monotonic()
                logger.warning(
                    "Could not read the paused queues (%s): keeping those last read, trying again every %.0f s.",
                    type(e).__name__,
                    BEAT_EVERY,
                )
            return
        if self.unread_since is not None:
            logger.info("Reading the paused queues again after %.0f s.", time.monotonic() - self.unread_since)
            self.unread_since = None

    def _write(self, worker: dramatiq.Worker) -> None:
        consumers = {name: thread.is_alive() for name, thread in worker.consumers.items()}
        beat = {
            "pid": os.getpid(),
            "at": time.time(),
            "threads": worker.worker_threads,
            "running": list(self.running.copy().values()),  # copied at once: threads change it
            "consumers": consumers,
            "paused": sorted({name.removesuffix(URGENT) for name in consumers if pause.is_paused(name)}),
            "completed": self.completed,
        }
        assert self.path is not None
        partial = self.path + ".partial"
        with open(partial, "w") as file:
            json.dump(beat, file)
        os.replace(partial, self.path)
