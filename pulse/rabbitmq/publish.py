"""Publishing many messages at once: in RabbitMQ transactions, for the loops and the sweeps."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

import dramatiq
import pika
import pika.exceptions
from dramatiq.brokers.rabbitmq import RabbitmqBroker

from pulse.config import Settings, get_settings
from pulse.rabbitmq import parameters, routed


class BatchPublisher:
    """Publishes dramatiq messages in RabbitMQ transactions: the whole batch is on disk when
    `publish` returns, for one round trip (a confirmed publish costs one per message). For a loop
    that sends many messages (the uptime scheduler); dramatiq's `send` is right for everything else.

    Parameters:
      settings(Settings): where RabbitMQ is.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.connection: pika.BlockingConnection | None = None
        self.channel: Any = None

    def publish(self, messages: Iterable[Any]) -> None:
        """Publish and commit; on a broker error, drop the connection and raise it (nothing of
        an uncommitted batch is delivered)."""
        channel = self._open()
        try:
            for message in (routed(m, self.settings.queue_type) for m in messages):
                channel.basic_publish(
                    exchange="",
                    routing_key=message.queue_name,
                    body=message.encode(),
                    properties=pika.BasicProperties(delivery_mode=2, priority=message.options.get("broker_priority")),
                )
            channel.tx_commit()
        except pika.exceptions.AMQPError:
            self.close()
            raise

    def _open(self) -> Any:
        if self.channel is None or not self.channel.is_open:
            self.close()
            self.connection = pika.BlockingConnection(parameters(self.settings))
            self.channel = self.connection.channel()
            self.channel.tx_select()
        return self.channel

    def waiting(self, queue_name: str) -> int:
        """How many messages wait in ``queue_name``, ready for a consumer (not those being processed)."""
        try:
            return int(self._open().queue_declare(queue=queue_name, passive=True).method.message_count)
        except pika.exceptions.AMQPError:
            self.close()
            raise

    def idle(self) -> None:
        """Answer RabbitMQ's heartbeats while nothing is published (a loop may send nothing for
        hours, and RabbitMQ closes a connection silent for two heartbeats); a connection that
        closed meanwhile is dropped, for the next `publish` to open a new one."""
        if self.connection is not None:
            try:
                self.connection.process_data_events(time_limit=0)
            except pika.exceptions.AMQPError:
                self.close()

    def close(self) -> None:
        if self.connection is not None and self.connection.is_open:
            try:
                self.connection.close()
            except pika.exceptions.AMQPError:
                pass
        self.connection = self.channel = None


def send_all(messages: list[Any], *, batch: int = 1000) -> None:
    """Enqueue many messages: on a RabbitMQ broker, in transactions of ``batch`` on this thread's
    own connection, kept for its next call within `KEEP_S` (one round trip and one disk sync for
    the batch instead of a confirm for each message), one by one on any other broker.

    A kept connection that RabbitMQ closed all the same is found out by the publish, which is made
    once more on a fresh one: a message may then be enqueued twice (a commit that went through
    before its answer was lost), as any message may be delivered twice."""
    broker = dramatiq.get_broker()
    if not isinstance(broker, RabbitmqBroker) or len(messages) < 2:
        for message in messages:
            broker.enqueue(message)
        return
    kept = _kept.__dict__
    if "publisher" not in kept:
        kept["publisher"] = BatchPublisher(get_settings())
    elif time.monotonic() - kept["used"] > KEEP_S:
        kept["publisher"].close()  # before RabbitMQ closes it, silent past its heartbeats
    publisher = kept["publisher"]
    for start in range(0, len(messages), batch):
        try:
            publisher.publish(messages[start : start + batch])
        except pika.exceptions.AMQPError:
            publisher.publish(messages[start : start + batch])  # the failed attempt closed its connection
    kept["used"] = time.monotonic()


KEEP_S = 20  # seconds a thread's connection for send_all is kept unused: less than two heartbeats
_kept = threading.local()  # each thread's: a pika connection is used by one thread only
