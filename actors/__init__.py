"""Actors, one module per domain and queue. Each receives ids, loads rows, calls into `pulse`,
and records the outcome.

Importing this package sets up the broker first, so every actor binds to Pulse's broker.
"""

from pulse.rabbitmq.broker import setup_broker

setup_broker()

from actors import calculated, cleanup, metrics, notifications, oncall, uptime  # noqa: E402,F401
