"""Skip a message whose RabbitMQ connection closed while it waited in the worker."""

from __future__ import annotations

from typing import Any

import dramatiq
from dramatiq.middleware import SkipMessage


class Orphans(dramatiq.Middleware):
    """A worker holds a few messages ahead of its threads (dramatiq's prefetch). When the connection
    they came on closes (its RabbitMQ node died, or the network dropped), RabbitMQ puts every
    message not yet acknowledged back in its queue and hands it to another consumer, or to this
    one once it reconnects. Running the copy held here too would run the message twice at once,
    so a message whose connection is closed when its turn comes is skipped (dramatiq logs it).

    `pulse.rabbitmq.broker.PulseConsumer` marks each message with its connection; messages of other brokers
    are never skipped.
    """

    def before_process_message(self, broker: dramatiq.Broker, message: Any) -> None:
        connection = getattr(message, "connection", None)
        if connection is not None and not connection.is_open:
            raise SkipMessage("its RabbitMQ connection closed: RabbitMQ delivers it again")
