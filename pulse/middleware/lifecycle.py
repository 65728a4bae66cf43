"""What a worker does as it starts: wait for RabbitMQ and declare every queue."""

from __future__ import annotations

import logging

import dramatiq
from dramatiq.brokers.rabbitmq import RabbitmqBroker

from pulse import rabbitmq
from pulse.config import Settings
from pulse.errors import ConfigError
from pulse.locations import here
from pulse.rabbitmq import queues

logger = logging.getLogger(__name__)


class Lifecycle(dramatiq.Middleware):
    """Before it starts, waits for RabbitMQ to answer (one warning line per attempt, at a growing
    interval: a worker started before RabbitMQ, as compose starts them together, starts by itself
    once it answers, without a traceback), then makes Pulse's queues, with their ``.DQ`` and
    ``.XQ``, exist with the type of PULSE_QUEUE_TYPE before any traffic, whichever queues this
    worker consumes: the management UI shows them all, and a message sent to a queue no worker
    consumes yet waits there. A queue that exists with another type stops the worker with one
    line saying how to migrate (`pulse.rabbitmq.queues.declare`), not consumers failing over and over. A
    worker told to consume some queues (``-Q notifications``) consumes their urgent twins too.

    Parameters:
      settings(Settings): where RabbitMQ is, and the queue type.
    """

    def __init__(self, *, settings: Settings) -> None:
        self.settings = settings

    def before_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        if worker.consumer_whitelist:
            worker.consumer_whitelist |= {rabbitmq.urgent(q) for q in worker.consumer_whitelist if q in rabbitmq.QUEUES}
        if not isinstance(broker, RabbitmqBroker):
            return
        rabbitmq.wait_for(self.settings)  # before the consumers start, which would fail noisily
        if self.settings.location:
            here.await_queue(self.settings)  # a location's worker declares nothing
            return
        try:
            queues.declare(self.settings)
        except ConfigError as e:
            logger.error("%s", e)
            raise SystemExit(2) from None
