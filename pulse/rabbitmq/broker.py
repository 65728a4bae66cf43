"""The broker: RabbitMQ (one node or a cluster's) with publisher confirms, heartbeats, classic or
quorum queues and urgent messages ahead of routine ones, its consumers pausing when told to and
letting in what other publishers send only through a gate.

It is given what it needs of the rest (its middleware, whether a queue is paused) by the
composition root (`pulse.app.workers`), which builds it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import dramatiq
import pika.exceptions
from dramatiq.brokers.rabbitmq import RabbitmqBroker, _RabbitmqConsumer
from dramatiq.errors import ConnectionClosed

from pulse.rabbitmq import CLASSIC, MAX_PRIORITY, QUEUES, URGENT, arguments, dq, routed, xq

__all__ = ["QUEUES", "LocationBroker", "PulseBroker", "gate"]

logger = logging.getLogger(__name__)


class PulseConsumer(_RabbitmqConsumer):
    """dramatiq's RabbitMQ consumer, marking each message with the connection it came on (for
    `pulse.middleware.orphans.Orphans`), and taking none while its broker says its queue is
    paused (``broker.paused``, `pulse.pause` as the root gives it).

    A message that came through a named exchange (not the default one, through which Pulse sends
    all its own) was published by someone else, such as a location's worker: before dramatiq
    decodes it, it goes through the gate its exchange's domain registered (`gate`), which returns
    the body to run, or None to drop it (acked, not run: the gate says why). What comes through
    an exchange without a gate is dropped with a warning line.

    A paused consumer cancels its subscription: RabbitMQ takes back at once what it had sent but
    dramatiq had not taken, and sends nothing more. The connection stays open and keeps being
    served, so the messages already in the process finish and are acked as usual (none runs
    twice) and heartbeats go on. On resume, it subscribes again.
    """

    def __init__(self, broker: Any, queue_name: str, prefetch: int, timeout: int) -> None:
        super().__init__(broker, queue_name, prefetch, timeout)
        self.timeout = timeout / 1000
        self.iterator = self._noting(self.iterator)

    def __next__(self) -> Any:
        try:
            if self.broker.paused(self.queue_name):
                return self._paused()
            if self.iterator is None:
                self.iterator = self._noting(self.channel.consume(self.queue_name, inactivity_timeout=self.timeout))
                logger.info("%s resumed: this process takes its messages again.", self.queue_name)
        except (pika.exceptions.AMQPConnectionError, pika.exceptions.AMQPChannelError) as e:
            raise ConnectionClosed(e) from None
        message = super().__next__()
        if message is None:
            return None
        message.connection = self.connection
        return message

    def _noting(self, frames: Iterator[Any]) -> Iterator[Any]:
        """The frames of the subscription, each that came through a named exchange through its
        gate (`GATES`), and those it drops left out."""
        for method, properties, body in frames:
            if method is not None and method.exchange:
                body = _through(method.exchange, method.routing_key, body)
                if body is None:
                    self.channel.basic_ack(method.delivery_tag)
                    continue
            yield method, properties, body

    def _paused(self) -> None:
        if self.iterator is not None:
            self.channel.cancel()
            self.iterator = None
            logger.info(
                "%s paused: this process takes none of its messages until `pulse queues resume %s`; "
                "those it holds finish.",
                self.queue_name,
                self.queue_name.removesuffix(URGENT),
            )
        self.connection.process_data_events(time_limit=self.timeout)  # acks of those in flight, heartbeats


Gate = Callable[[str, bytes], "bytes | None"]

#: The gate of each named exchange a message may come through: ``gate(routing_key, body)``, the
#: body to run, or None to drop it. Registered by the domain that owns the exchange (`gate`).
GATES: dict[str, Gate] = {}


def gate(exchange: str) -> Callable[[Gate], Gate]:
    """Register the decorated function as the gate of ``exchange`` (`PulseConsumer`)."""

    def register(function: Gate) -> Gate:
        GATES[exchange] = function
        return function

    return register


def _through(exchange: str, routing_key: str, body: bytes) -> bytes | None:
    """``body`` as the gate of ``exchange`` lets it in, or None."""
    if exchange not in GATES:
        logger.warning("A message through the exchange %r, which has no gate, dropped, not run.", exchange[:60])
        return None
    return GATES[exchange](routing_key, body)


class PulseBroker(RabbitmqBroker):
    """dramatiq's RabbitmqBroker, declaring queues of one type with `pulse.rabbitmq.arguments` and
    publishing each message where `pulse.rabbitmq.routed` sends it (with quorum queues, an urgent
    message goes to its queue's urgent twin).

    Parameters:
      queue_type(str): ``classic`` or ``quorum``.
      paused: whether a queue is paused (by its name): its consumers then take none of its messages
        (default: none ever is).
      **options: RabbitmqBroker's (``url``, ``confirm_delivery``, ``middleware``).
    """

    def __init__(
        self, *, queue_type: str, paused: Callable[[str], bool] = lambda queue_name: False, **options: Any
    ) -> None:
        super().__init__(max_priority=MAX_PRIORITY if queue_type == CLASSIC else None, **options)
        self.queue_type = queue_type
        self.paused = paused

    @property
    def consumer_class(self) -> type[PulseConsumer]:
        return PulseConsumer

    def _build_queue_arguments(self, queue_name: str) -> dict[str, Any]:
        return arguments(queue_name, self.queue_type)

    def _declare_xq_queue(self, queue_name: str) -> Any:
        name = xq(queue_name)
        return self.channel.queue_declare(queue=name, durable=True, arguments=arguments(name, self.queue_type))

    def enqueue(self, message: dramatiq.Message, *, delay: int | None = None) -> dramatiq.Message:
        return super().enqueue(routed(message, self.queue_type), delay=delay)


def _never(queue_name: str) -> bool:
    return False


class LocationBroker(PulseBroker):
    """A location's broker: its consumer only checks that its queues exist (a passive declare, for
    which RabbitMQ asks no permission), since its user may configure nothing
    (`pulse.locations.permissions`): the central workers made them, with the dead-letter routing."""

    def _declare_queue(self, queue_name: str) -> Any:
        return self.channel.queue_declare(queue_name, passive=True)

    def _declare_dq_queue(self, queue_name: str) -> Any:
        return self.channel.queue_declare(dq(queue_name), passive=True)

    def _declare_xq_queue(self, queue_name: str) -> Any:
        return self.channel.queue_declare(xq(queue_name), passive=True)
