"""Worker recycling: a worker process that has processed ``max_messages`` messages, or holds more
than ``max_memory`` MiB of resident memory, is replaced by a fresh one, gracefully.

dramatiq's main process does not start a worker process again when one exits: it stops the others
and exits, for the supervisor to start it again. On SIGHUP, though, it stops every worker process
gracefully and then re-executes itself in place (same PID), starting fresh worker processes: that
is how a process is replaced here, without the supervisor. So a worker process past a limit logs
one line and sends SIGHUP to its main process. Every worker process of that ``dramatiq`` then
stops as on SIGTERM: it notices within a second, its threads finish the messages they run
(acknowledged as usual), the messages it holds and has not started go back to RabbitMQ, its loops
give their turns up, and the main process starts the run again.

What that costs: all N processes of the run are replaced together, and no message starts for a
few seconds (measured in docs/operations.md, Runbook); and dramatiq leaves its fork processes of
the previous run (metrics, watchdog) unreaped, two defunct entries in the process table per
restart until the main process exits. Hence a message limit well above the 1,000 of a Celery
child, which is replaced alone and at no such cost
(`pulse.config.Settings.max_messages_per_process`).

Only one SIGHUP is sent per run: a second one would reach worker processes already stopping, and
dramatiq stops a worker process hard on its second signal (its messages in flight cut off, to be
delivered again). The first process to ask takes a lock in the run's directory, held until it
exits; the others find it taken and are replaced by the restart under way. A worker process
stopping for a SIGHUP also ignores further SIGHUPs and the first other signal (an operator's
SIGTERM during the restart turns it into a stop, still graceful); the next one stops it hard, as
dramatiq does.

Only in worker processes started by ``dramatiq``'s command line; elsewhere (a StubBroker in
tests, a Worker of one's own) the middleware does nothing.
"""

from __future__ import annotations

import fcntl
import logging
import multiprocessing
import os
import signal
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

import dramatiq

from pulse.config import Settings
from pulse.runs import run_directory

logger = logging.getLogger(__name__)

MIB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")
LOCK = "reload.lock"


class Recycling(dramatiq.Middleware):
    """Replaces the worker processes (see the module's docstring) once one of them has processed
    ``max_messages`` messages or holds more than ``max_memory`` MiB of resident memory, counted
    after each message.

    Parameters:
      settings(Settings): where the run's shared directory is.
      max_messages(int): messages a worker process processes before it is replaced (0: no limit).
      max_memory(int): resident memory in MiB past which a worker process is replaced (0: no limit).
    """

    def __init__(self, *, settings: Settings, max_messages: int, max_memory: int) -> None:
        self.settings = settings
        self.max_messages = max_messages
        self.max_memory = max_memory
        self.main_pid: int | None = None
        self.statm: int | None = None
        self.processed = 0
        self.counting = threading.Lock()
        self.asked = self.stopping = self.absorbed = False
        self.first_signal: int | None = None
        self.lock: int | None = None

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self.main_pid = dramatiq_main()
        if self.main_pid is None or not (self.max_messages or self.max_memory):
            return
        self.statm = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
        booted = self.resident()
        if self.max_memory and booted >= self.max_memory * MIB:
            logger.warning(
                "PULSE_MAX_MEMORY_PER_PROCESS_MIB=%d MiB is less than this worker process holds after booting "
                "(%.0f MiB): it is not recycled for its memory.",
                self.max_memory,
                booted / MIB,
            )
            self.max_memory = 0
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, self._signal_handler(signal.getsignal(signum)))

    def after_process_message(
        self, broker: dramatiq.Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        if self.statm is None or self.asked or self.stopping:
            return
        with self.counting:
            self.processed += 1
            processed = self.processed
        if processed == self.max_messages:  # one message crosses it, however many threads finish at once
            why = f"processed {processed} messages (PULSE_MAX_MESSAGES_PER_PROCESS={self.max_messages})"
            self.reload(logging.INFO, why, self.resident())
        elif self.max_memory and (resident := self.resident()) > self.max_memory * MIB:
            why = f"went past PULSE_MAX_MEMORY_PER_PROCESS_MIB={self.max_memory} MiB after {processed} messages"
            self.reload(logging.WARNING, why, resident)

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self.stopping = True

    def resident(self) -> int:
        """This process's resident memory, in bytes."""
        assert self.statm is not None
        return int(os.pread(self.statm, 64, 0).split()[1]) * PAGE

    def reload(self, level: int, why: str, resident: int) -> None:
        """Ask the main process for a restart of its worker processes, unless one is under way."""
        with self.counting:
            if self.asked:
                return
            self.asked = True
        self.lock = take_the_reload_lock(self.settings)
        if self.lock is None:
            return  # another process asked: the restart under way replaces this one too
        logger.log(
            level,
            "Recycling worker process %d: it %s and holds %.0f MiB; dramatiq (PID %d) restarts its worker processes "
            "gracefully.",
            os.getpid(),
            why,
            resident / MIB,
            self.main_pid,
        )
        os.kill(self.main_pid, signal.SIGHUP)  # type: ignore[arg-type]

    def _signal_handler(self, dramatiq_handler: Any) -> Callable[[int, types.FrameType | None], None]:
        """dramatiq's handler, but for a signal that would stop hard a process that stops gracefully
        already for a SIGHUP: a SIGHUP, and the first other signal (see the module's docstring)."""

        def handle(signum: int, frame: types.FrameType | None) -> None:
            if self.first_signal is None:
                self.first_signal = signum
            elif signum == signal.SIGHUP or (self.first_signal == signal.SIGHUP and not self.absorbed):
                self.absorbed = self.absorbed or signum != signal.SIGHUP
                logger.info("Worker process %d is already stopping gracefully.", os.getpid())
                return
            self.stopping = True
            dramatiq_handler(signum, frame)

        return handle


def dramatiq_main() -> int | None:
    """The PID of the ``dramatiq`` main process that started this worker process, or None."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.pid != os.getppid() or "dramatiq.cli" not in sys.modules:
        return None
    return parent.pid


def take_the_reload_lock(settings: Settings) -> int | None:
    """The run's reload lock, held until this process exits; None when another process holds it."""
    directory = run_directory(settings.metrics_dir)
    os.makedirs(directory, exist_ok=True)
    fd = os.open(os.path.join(directory, LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
