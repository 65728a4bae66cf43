"""A location's work (`pulse.locations`): the batches of checks sent to its queue,
``uptime.<PULSE_LOCATION>``, checked here and sent back. Declared only in a location's worker."""

from __future__ import annotations

import dramatiq

from pulse.config import get_settings
from pulse.locations import dispatch, here, queue

settings = get_settings()

if settings.location:

    @dramatiq.actor(actor_name=dispatch.ACTOR, queue_name=queue(settings.location), time_limit=120_000, max_retries=0)
    def check_here(sealed: str) -> None:
        """Make the sealed batch's checks and send the results back. Not retried: a retry would be
        published through the default exchange, which a location's user may not write to; the
        central verdict goes on without a result that does not come."""
        here.send_back(*here.check(sealed, settings), settings)
