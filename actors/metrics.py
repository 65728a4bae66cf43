"""The metrics queue's work: one poll of one metrics query (`pulse.metrics.poll.poll_slot`)."""

from __future__ import annotations

import dramatiq
from dramatiq.middleware import CurrentMessage

from pulse import events
from pulse.metrics import poll as polling
from pulse.middleware.retries import last_attempt
from pulse.recurring.grid import parse_slot


@dramatiq.actor(queue_name="metrics", time_limit=120_000, max_retries=2)
def poll(metrics_query_id: int, scheduled_at: str) -> None:
    """Poll one query for the slot ``scheduled_at`` (ISO 8601) and record what it found; a failure
    is retried, dead-lettered or recorded as no data as `pulse.metrics.poll.poll_slot` says."""
    message = CurrentMessage.get_current_message()
    final = message is None or last_attempt(dramatiq.get_broker(), message)
    polled = polling.poll_slot(metrics_query_id, parse_slot(scheduled_at), final=final)
    events.publish(polled.events)
    if polled.failure is not None:
        raise polled.failure
