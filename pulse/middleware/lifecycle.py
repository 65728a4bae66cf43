"""What a worker does as it starts and stops: wait for RabbitMQ, declare every queue, and tell long
loops to end."""

from __future__ import annotations

import dramatiq
from dramatiq.brokers.rabbitmq import RabbitmqBroker

from pulse import rabbitmq
from pulse.config import Settings
from pulse.ticks import stopping


class Lifecycle(dramatiq.Middleware):
    """Before it starts, waits for RabbitMQ to answer (one warning line per attempt, at a growing
    interval: a worker started before RabbitMQ, as compose starts them together, starts by itself
    once it answers, without a traceback). At start, makes Pulse's queues, with their ``.DQ`` and
    ``.XQ``, exist on RabbitMQ before any traffic, whichever queues this worker consumes: the
    management UI shows them all, and a message sent to a queue no worker consumes yet waits
    there. At shutdown, sets
    `pulse.ticks.stopping`, so a loop running in an actor (the uptime scheduler) ends at once
    instead of holding the shutdown for its remaining minute.

    Parameters:
      settings(Settings): where RabbitMQ is.
      queues(tuple[str, ...]): the queue names.
    """

    def __init__(self, *, settings: Settings, queues: tuple[str, ...]) -> None:
        self.settings = settings
        self.queues = queues

    def before_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        if isinstance(broker, RabbitmqBroker):  # before the consumers start, which would fail noisily
            rabbitmq.wait_for(self.settings)

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        stopping.clear()
        if not isinstance(broker, RabbitmqBroker):
            return
        for queue_name in self.queues:
            broker.declare_queue(queue_name, ensure=True)
        # The connection was opened by this (main) thread, which sends nothing later.
        del broker.connection

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        stopping.set()
