"""What recurs, one module per domain: the claim-and-send loops that worker processes run
(`pulse.recurring.loop`: uptime checks, metric polls, calculated metrics, on-call escalations), and the
periodic ticks that periodiq sends (cleanup, rollups, the outbox sweep, the heartbeat, overdue
escalations). Neither does the work itself: each sends messages for the actors.

Importing this package sets up the broker first, so every tick binds to Pulse's broker.
"""

from pulse.app.workers import setup_broker

setup_broker()

from schedules import calculated, cleanup, heartbeat, metrics, oncall, outbox, uptime  # noqa: E402,F401
