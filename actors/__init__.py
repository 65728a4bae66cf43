"""Actors, one module per domain and queue. Each receives ids, loads rows, calls into `pulse`,
and records the outcome. A location's worker (``PULSE_LOCATION``) declares its location's actor
only (`actors.location`): it consumes that queue and no other.

Importing this package sets up the broker first, so every actor binds to Pulse's broker.
"""

from pulse.app.workers import setup_broker
from pulse.config import get_settings

setup_broker()

if get_settings().location:
    from actors import location  # noqa: F401
else:
    from actors import calculated, cleanup, metrics, notifications, oncall, uptime  # noqa: F401
