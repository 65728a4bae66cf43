"""Periodic ticks: actors that periodiq sends on a cron schedule."""

from __future__ import annotations

import threading
from typing import Any

import dramatiq

from pulse.rabbitmq import PRIORITY_URGENT

#: Set when this worker process begins to shut down (see `pulse.middleware.lifecycle`).
stopping = threading.Event()


class Tick(dramatiq.Actor):
    """An actor whose messages go ahead of routine work in RabbitMQ, so a tick that schedules
    checks is not stuck behind a backlog of the checks it scheduled."""

    def send_with_options(self, **options: Any) -> dramatiq.Message:
        options.setdefault("broker_priority", PRIORITY_URGENT)
        return super().send_with_options(**options)
