"""The metrics queue's work: one poll of one metrics query."""

from __future__ import annotations

import logging

import dramatiq
from dramatiq.middleware import CurrentMessage

from pulse import events
from pulse import logging as pulse_logging
from pulse.config import get_settings
from pulse.errors import PermanentError, TransientError
from pulse.grid import parse_slot
from pulse.metrics import poll as polling
from pulse.middleware.retries import last_attempt
from pulse.net import AddressPolicy
from pulse.net.api import ApiError

logger = logging.getLogger(__name__)
POLICY = AddressPolicy.from_settings(get_settings())
TIMEOUT_S = 10.0  # seconds for one call to the vendor: connecting, sending, reading the answer
INTERNAL = "internal error (see the worker's log)"


@dramatiq.actor(queue_name="metrics", time_limit=120_000, max_retries=2)
def poll(metrics_query_id: int, scheduled_at: str) -> None:
    """Poll one query for the slot ``scheduled_at`` (ISO 8601) and record what it found.

    A failure is shown on the query and its integration (`pulse metrics`), the vendor's text quoted
    (redacted and bounded, `pulse.net.api.quote`). A transient one is retried; a permanent one
    (bad credentials, a bad query, an answer that is not the vendor's JSON) is dead-lettered. When
    no retry follows, the slot is recorded as having no data, which the thresholds' no-data rule
    judges; its reason, which may reach subscribers, names the vendor and nothing it said
    ("Prometheus unavailable"). Any other exception is a bug: retried like a transient failure,
    it shows as an internal error and, on the last attempt, records no data all the same.
    """
    slot = parse_slot(scheduled_at)
    loaded = polling.load(metrics_query_id, slot)
    if loaded is None or not loaded.pollable:
        logger.info("Metrics query %s is gone or paused: poll skipped.", metrics_query_id)
        return
    pulse_logging.bind(organizationId=loaded.organization_id, componentId=loaded.component_id)
    if loaded.recorded:
        return  # a redelivered message: this slot is recorded already
    try:
        sample = polling.run(loaded, POLICY, TIMEOUT_S)
    except ApiError as e:
        polling.failed(loaded, str(e))
        message = CurrentMessage.get_current_message()
        if not e.permanent and (message is None or not last_attempt(dramatiq.get_broker(), message)):
            if e.retry_after is not None:  # a 429: come back when the vendor says
                raise dramatiq.Retry(str(e), delay=round(e.retry_after * 1000)) from None
            raise TransientError(str(e)) from None
        events.publish(polling.record(loaded, slot, polling.unavailable(loaded)))
        if e.permanent:
            raise PermanentError(str(e)) from None  # the dead letters say so in one line
        logger.warning("%s: %s; recorded as no data for %s.", loaded.name, e, scheduled_at)
        return
    except Exception:  # a bug, reading the reply say: the slot still ends as no data, the traceback logged
        polling.failed(loaded, INTERNAL)
        message = CurrentMessage.get_current_message()
        if message is None or last_attempt(dramatiq.get_broker(), message):
            events.publish(polling.record(loaded, slot, polling.unavailable(loaded)))
        raise
    events.publish(polling.record(loaded, slot, sample))
