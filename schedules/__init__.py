"""Periodic ticks (periodiq), one module per domain. A tick claims due work in the database and
sends messages; it never does the work itself.

Importing this package sets up the broker first, so every tick binds to Pulse's broker.
"""

from pulse.broker import setup_broker

setup_broker()

from schedules import calculated, cleanup, heartbeat, metrics, oncall, outbox, uptime  # noqa: E402,F401
