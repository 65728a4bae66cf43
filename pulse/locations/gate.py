"""What the central workers let in through `RESULTS`, the exchange a location's worker publishes
its results to (`pulse.rabbitmq.broker.gate`).

A location's RabbitMQ user may publish there only with its own name as routing key, and is
trusted with nothing else: its message is rebuilt from its actor and validated arguments alone
(`pulse.locations.wire.results_message`: its options, such as an ``eta`` that would hold the
central consumer's prefetch or retries of its choosing, are not taken) and counted against the
location's allowance (`pulse.locations.allowance`). Anything else is dropped with one warning
line: a location cannot make the central workers run any other actor, hold a message, nor
record results as another location.
"""

from __future__ import annotations

import logging

from pulse.locations import RESULTS, wire
from pulse.locations.allowance import allowance
from pulse.rabbitmq.broker import gate

logger = logging.getLogger(__name__)


@gate(RESULTS)
def results(location: str, body: bytes) -> bytes | None:
    """The body of the message recording ``location``'s results, or None to drop it."""
    try:
        message = wire.results_message(location, body)
    except wire.RefusedError as e:
        logger.warning("A message through %s from location %r dropped, not run: %s.", RESULTS, location[:40], e)
        return None
    if not allowance().admit(location, len(message.args[2])):
        return None  # told once a minute
    return message.encode()
