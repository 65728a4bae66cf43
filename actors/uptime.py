"""The uptime queue's work: one HTTP check of one component."""

from __future__ import annotations

import logging
from datetime import datetime

import dramatiq

from pulse import events
from pulse import logging as pulse_logging
from pulse.config import get_settings
from pulse.errors import PermanentError
from pulse.net import AddressPolicy
from pulse.uptime import record
from pulse.uptime.check import run as run_check

logger = logging.getLogger(__name__)
POLICY = AddressPolicy.from_settings(get_settings())


@dramatiq.actor(queue_name="uptime", time_limit=120_000, max_retries=2)
def check(component_id: int, scheduled_at: str) -> None:
    """Check one component for the slot ``scheduled_at`` (ISO 8601) and record the outcome."""
    try:
        slot = datetime.fromisoformat(scheduled_at)
    except (TypeError, ValueError):
        raise PermanentError(f"scheduled_at {scheduled_at!r} is not an ISO 8601 time") from None
    loaded = record.load(component_id, slot)
    if loaded is None or not loaded.checkable:
        logger.info("Component %s is gone, paused or not an endpoint: check skipped.", component_id)
        return
    pulse_logging.bind(organizationId=loaded.component.organization_id)
    if loaded.recorded:
        return  # a redelivered message: this slot is recorded already
    outcome = run_check(loaded.request, loaded.conditions, loaded.extract, POLICY)
    events.publish(record.save(loaded, slot, outcome))
