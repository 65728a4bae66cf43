"""The recurring loops, run beside a worker process's threads."""

from __future__ import annotations

import logging
import threading

import dramatiq
from dramatiq.brokers.rabbitmq import RabbitmqBroker

from pulse.config import Settings
from pulse.recurring import loop

logger = logging.getLogger(__name__)

STOP_WAIT = 5.0  # seconds a stopping worker waits for each loop to give its turn up


class Loops(dramatiq.Middleware):
    """Starts, as a worker process boots, a thread for each declared loop (`pulse.recurring.loop.LOOPS`)
    whose queue the process consumes (all of them without ``-Q``): a `pulse.recurring.loop.Runner`, which
    runs its loop while the loop's turn is this process's. At shutdown, stops them: each gives its
    turn up, for another process to take at once. No loop ever takes one of dramatiq's worker
    threads. None runs on a StubBroker (unit tests drive `pulse.recurring.loop` directly).

    Parameters:
      settings(Settings): where PostgreSQL is.
    """

    def __init__(self, *, settings: Settings) -> None:
        self.settings = settings
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.turns: loop.Turns | None = None

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        if not isinstance(broker, RabbitmqBroker):
            return
        self.stop.clear()
        self.turns = loop.Turns(self.settings.database_url)
        consumed = worker.consumer_whitelist
        names = [name for name, declared in loop.LOOPS.items() if not consumed or declared.queue_name in consumed]
        for name in names:
            runner = loop.Runner(loop.LOOPS[name], self.turns, self.stop)
            self.threads.append(threading.Thread(target=runner.run, name=f"{name} loop", daemon=True))
        for thread in self.threads:
            thread.start()
        if names:
            logger.info("This process runs, at their turn, the loops: %s.", ", ".join(names))
        else:
            queues = sorted({declared.queue_name for declared in loop.LOOPS.values()})
            logger.info("This process runs no loop: it consumes none of their queues (%s).", ", ".join(queues))

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(STOP_WAIT)
        self.threads = []
        if self.turns is not None:
            self.turns.close()
