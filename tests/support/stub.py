"""Pulse's own actors on dramatiq's StubBroker, in dramatiq's style: declare, send, join, assert."""

import dramatiq


class Enqueued(dramatiq.Middleware):
    """Remembers every message enqueued, with its delay."""

    def __init__(self):
        self.messages = []

    def before_enqueue(self, broker, message, delay):
        self.messages.append((message, delay))


def declare(broker, actor, **options):
    """``actor`` (one of Pulse's) declared on ``broker``, its options overridden by ``options``."""
    return dramatiq.Actor(
        actor.fn,
        broker=broker,
        actor_name=actor.actor_name,
        queue_name=actor.queue_name,
        priority=actor.priority,
        options={**actor.options, **options},
    )
