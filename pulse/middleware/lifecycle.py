"""What a worker does as it starts: wait for RabbitMQ and make its queues ready."""

from __future__ import annotations

import logging
from collections.abc import Callable

import dramatiq
from dramatiq.brokers.rabbitmq import RabbitmqBroker

from pulse import rabbitmq
from pulse.config import Settings
from pulse.errors import ConfigError

logger = logging.getLogger(__name__)


class Lifecycle(dramatiq.Middleware):
    """Before it starts, waits for RabbitMQ to answer (one warning line per attempt, at a growing
    interval: a worker started before RabbitMQ, as compose starts them together, starts by itself
    once it answers, without a traceback), then makes its queues ready (``prepare``): a central
    worker makes Pulse's queues, with their ``.DQ`` and ``.XQ``, exist with the type of
    PULSE_QUEUE_TYPE before any traffic, whichever queues it consumes (the management UI shows them
    all, and a message sent to a queue no worker consumes yet waits there); a location's waits for
    its queue, declaring nothing. A queue that exists with another type (a ConfigError) stops the
    worker with one line saying how to migrate (`pulse.rabbitmq.queues.declare`), not consumers
    failing over and over. A worker told to consume some queues (``-Q notifications``) consumes
    their urgent twins too.

    Parameters:
      settings(Settings): where RabbitMQ is.
      prepare: makes the queues ready, once RabbitMQ answers (`pulse.app.workers` gives it).
    """

    def __init__(self, *, settings: Settings, prepare: Callable[[], None]) -> None:
        self.settings = settings
        self.prepare = prepare

    def before_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        if worker.consumer_whitelist:
            worker.consumer_whitelist |= {rabbitmq.urgent(q) for q in worker.consumer_whitelist if q in rabbitmq.QUEUES}
        if not isinstance(broker, RabbitmqBroker):
            return
        rabbitmq.wait_for(self.settings)  # before the consumers start, which would fail noisily
        try:
            self.prepare()
        except ConfigError as e:
            logger.error("%s", e)
            raise SystemExit(2) from None
