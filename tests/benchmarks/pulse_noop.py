"""Pulse's broker with all its middleware, and the same no-op actor."""

import dramatiq

from pulse.app.workers import setup_broker

broker = setup_broker()


@dramatiq.actor(queue_name="bench-pulse")
def noop() -> None:
    pass
