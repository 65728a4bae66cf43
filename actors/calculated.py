"""The calculated-metrics queue's work: evaluations of calculated metrics, a batch of those due
together per message (`recalculate_all`), or one (`recalculate`, the shape the loop sent before it
batched, still taken): `pulse.calculated.record.evaluate_all`."""

from __future__ import annotations

import dramatiq

from pulse import events
from pulse import logging as pulse_logging
from pulse.calculated import record
from pulse.recurring.grid import parse_batch, parse_slot


@dramatiq.actor(queue_name="calculated-metrics", time_limit=30_000, max_retries=3)
def recalculate(calculated_metric_id: int, scheduled_at: str) -> None:
    """Evaluate one calculated metric for the time it came due (``scheduled_at``, ISO 8601) and
    record the outcome; then mark the metrics it feeds if what they read changed."""
    events.publish(record.evaluate_all([(calculated_metric_id, parse_slot(scheduled_at))]))


@dramatiq.actor(queue_name="calculated-metrics", time_limit=30_000, max_retries=3)
def recalculate_all(batch: list[list]) -> None:
    """Evaluate each ``[calculated_metric_id, scheduled_at]`` of ``batch`` as `recalculate` does one,
    read in one query and written in one statement. Its log lines carry the ``calculatedMetricIds``."""
    slots = parse_batch(batch, "calculated_metric_id")
    pulse_logging.bind(calculatedMetricIds=[metric_id for metric_id, _ in slots])
    events.publish(record.evaluate_all(slots))
