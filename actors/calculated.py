"""The calculated-metrics queue's work: one evaluation of one calculated metric
(`pulse.calculated.record.evaluate_slot`)."""

from __future__ import annotations

import dramatiq

from pulse import events
from pulse.calculated import record
from pulse.recurring.grid import parse_slot


@dramatiq.actor(queue_name="calculated-metrics", time_limit=30_000, max_retries=3)
def recalculate(calculated_metric_id: int, scheduled_at: str) -> None:
    """Evaluate one calculated metric for the time it came due (``scheduled_at``, ISO 8601) and
    record the outcome; then mark the metrics it feeds if what they read changed."""
    events.publish(record.evaluate_slot(calculated_metric_id, parse_slot(scheduled_at)))
