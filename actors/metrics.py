"""The metrics queue's work: polls of metrics queries, a batch of those due together per message
(`polls`), or one (`poll`, the shape the loop sent before it batched, still taken):
`pulse.metrics.poll.poll_all`."""

from __future__ import annotations

from datetime import datetime

import dramatiq
from dramatiq.middleware import CurrentMessage

from pulse import events
from pulse import logging as pulse_logging
from pulse.metrics import poll as polling
from pulse.middleware.retries import last_attempt
from pulse.recurring.grid import parse_batch, parse_slot


@dramatiq.actor(queue_name="metrics", time_limit=120_000, max_retries=2)
def poll(metrics_query_id: int, scheduled_at: str) -> None:
    """Poll one query for the slot ``scheduled_at`` (ISO 8601) and record what it found; a failure
    is retried, dead-lettered or recorded as no data as `pulse.metrics.poll.poll_all` says."""
    _poll_all([(metrics_query_id, parse_slot(scheduled_at))])


@dramatiq.actor(queue_name="metrics", time_limit=120_000, max_retries=2)
def polls(batch: list[list]) -> None:
    """Poll each ``[metrics_query_id, scheduled_at]`` of ``batch`` at once and record what they
    found, as `poll` does one. Its log lines carry the ``metricsQueryIds`` of the batch."""
    slots = parse_batch(batch, "metrics_query_id")
    pulse_logging.bind(metricsQueryIds=[query_id for query_id, _ in slots])
    _poll_all(slots)


def _poll_all(slots: list[tuple[int, datetime]]) -> None:
    message = CurrentMessage.get_current_message()
    final = message is None or last_attempt(dramatiq.get_broker(), message)
    polled = polling.poll_all(slots, final=final)
    events.publish(polled.events)
    if polled.failure is not None:
        raise polled.failure
