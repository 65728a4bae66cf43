"""The calculated-metrics queue's work: one evaluation of one calculated metric."""

from __future__ import annotations

import logging

import dramatiq

from pulse import events
from pulse import logging as pulse_logging
from pulse.calculated import due, record
from pulse.grid import parse_slot
from pulse.models import utcnow

logger = logging.getLogger(__name__)


@dramatiq.actor(queue_name="calculated-metrics", time_limit=30_000, max_retries=3)
def recalculate(calculated_metric_id: int, scheduled_at: str) -> None:
    """Evaluate one calculated metric with its inputs' latest values, for the time it came due
    (``scheduled_at``, ISO 8601: the evaluation's key), and record the outcome; then mark the
    metrics it feeds if what they read changed."""
    slot = parse_slot(scheduled_at)
    loaded = record.load(calculated_metric_id)
    if loaded is None:
        logger.info("Calculated metric %s is gone: evaluation skipped.", calculated_metric_id)
        return
    pulse_logging.bind(organizationId=loaded.organization_id, componentId=loaded.component_id)
    if loaded.last_evaluated_at is not None and loaded.last_evaluated_at >= slot:
        return  # a redelivered message, or one overtaken by a later evaluation
    now = utcnow()
    result = record.outcome(loaded, max(now, slot))
    applied, written = record.save(loaded, slot, result, now)
    events.publish(written)
    if applied and record.changed(loaded, result):
        due.mark_dependents(loaded.id)
