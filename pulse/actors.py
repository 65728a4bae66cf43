"""Entry module of the workers and the scheduler:

    dramatiq pulse.actors [-Q uptime ...]    # workers
    periodiq pulse.actors                    # scheduler

It reads the settings, sets up JSON logs, the database and the broker, then imports every actor
(`actors`) and every periodic tick (`schedules`). A location's worker (``PULSE_LOCATION``) has no
database and declares nothing: it consumes its location's queue (`actors.location`). A bad
setting stops the process with one line, as does a queue of another type than PULSE_QUEUE_TYPE;
a RabbitMQ that does not answer yet is waited for (one line per attempt).
"""

import logging
import multiprocessing

from pulse.config import get_settings, renamed_in_use
from pulse.errors import ConfigError

try:
    settings = get_settings()
except ConfigError as e:
    raise SystemExit(f"pulse: {e}") from None

from pulse import logging as pulse_logging
from pulse import rabbitmq
from pulse.app.workers import setup_broker
from pulse.db import setup_database
from pulse.rabbitmq import queues

pulse_logging.configure(settings.log_level)
for warning in renamed_in_use():
    logging.getLogger(__name__).warning("%s", warning)
if not settings.location:
    setup_database(settings)
if multiprocessing.parent_process() is None and not settings.broker_url.startswith("stub:") and not settings.location:
    # The scheduler waits here; a dramatiq worker process waits as it boots (pulse.middleware.lifecycle),
    # once dramatiq has read what this module declares.
    rabbitmq.wait_for(settings)
    try:
        queues.declare(settings)
    except ConfigError as e:
        raise SystemExit(f"pulse: {e}") from None
broker = setup_broker(settings)

import actors  # noqa: E402,F401 - declares the actors on the broker

if not settings.location:
    import schedules  # noqa: F401 - declares the periodic ticks

__all__ = ["broker"]
