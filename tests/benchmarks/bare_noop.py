"""The baseline: bare dramatiq (its default middleware) and a no-op actor."""

import os

import dramatiq
from dramatiq.brokers.rabbitmq import RabbitmqBroker

broker = RabbitmqBroker(url=os.environ["PULSE_BROKER_URL"])
dramatiq.set_broker(broker)


@dramatiq.actor(queue_name="bench-bare")
def noop() -> None:
    pass
