"""send_all on RabbitMQ: several messages in one transaction on the calling thread's kept
connection, a fresh one after it was unused `KEEP_S` or closed by RabbitMQ; each message in the
queue once."""

import dataclasses
import time

import dramatiq
import pytest

from pulse.app.workers import build_broker
from pulse.rabbitmq import publish, queues
from pulse.rabbitmq.publish import BatchPublisher, send_all


@pytest.fixture
def rabbitmq_broker(rabbit):
    """A RabbitMQ broker as the process's; the thread's kept connection closed after the test."""
    previous = dramatiq.get_broker()

    def use(settings):
        queues.declare(settings)  # as a worker does as it boots
        dramatiq.set_broker(build_broker(settings))

    yield use
    if "publisher" in publish._kept.__dict__:
        publish._kept.__dict__.pop("publisher").close()
    dramatiq.get_broker().close()
    dramatiq.set_broker(previous)


def messages(*numbers):
    return [
        dramatiq.Message(queue_name="cleanup", actor_name="noop", args=(n,), kwargs={}, options={}) for n in numbers
    ]


def waiting(settings):
    """How many messages wait in the cleanup queue."""
    counter = BatchPublisher(settings)
    try:
        return counter.waiting("cleanup")
    finally:
        counter.close()


def test_messages_sent_together_share_the_threads_kept_connection(rabbit, rabbitmq_broker, monkeypatch):
    rabbitmq_broker(rabbit)
    send_all(messages(1, 2, 3))
    connection = publish._kept.publisher.connection
    send_all(messages(4, 5))
    assert publish._kept.publisher.connection is connection

    monkeypatch.setattr(publish, "KEEP_S", 0)  # unused too long: closed, a fresh one opened
    send_all(messages(6, 7))
    assert publish._kept.publisher.connection is not connection and not connection.is_open

    assert waiting(rabbit) == 7


def test_a_kept_connection_rabbitmq_closed_is_replaced_and_nothing_is_lost(rabbit, rabbitmq_broker, monkeypatch):
    rabbitmq_broker(rabbit)
    monkeypatch.setattr(
        publish, "get_settings", lambda: dataclasses.replace(rabbit, broker_url=rabbit.broker_url + "?heartbeat=1")
    )
    send_all(messages(1, 2))
    connection = publish._kept.publisher.connection
    time.sleep(4)  # RabbitMQ closes a connection that misses two heartbeats of 1 s

    send_all(messages(3, 4))

    assert publish._kept.publisher.connection is not connection
    assert waiting(rabbit) == 4
