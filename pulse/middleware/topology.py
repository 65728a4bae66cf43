"""Declares every Pulse queue when a worker starts, whichever queues it consumes."""

from __future__ import annotations

import dramatiq
from dramatiq.brokers.rabbitmq import RabbitmqBroker


class Topology(dramatiq.Middleware):
    """Makes the queues, with their ``.DQ`` and ``.XQ``, exist on RabbitMQ before any traffic,
    so the management UI shows them all and a message sent to a queue no worker consumes yet waits
    there instead of being dropped.

    Parameters:
      queues(tuple[str, ...]): the queue names.
    """

    def __init__(self, *, queues: tuple[str, ...]) -> None:
        self.queues = queues

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        if not isinstance(broker, RabbitmqBroker):
            return
        for queue_name in self.queues:
            broker.declare_queue(queue_name, ensure=True)
        # The connection was opened by this (main) thread, which sends nothing later.
        del broker.connection
