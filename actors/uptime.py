"""The uptime queue's work: HTTP checks of components, each for its slot.

The scheduling loop sends the checks due together as one message (`checks`): their components are
read in one query, their requests run at once, on a pool of threads that only make requests
(`CONCURRENT_CHECKS` per process), and their outcomes are written in one transaction (most of them
in one statement), so RabbitMQ, dramatiq and PostgreSQL's round trips and commit are paid once a
batch, not once a check. Each check is still recorded once per component and slot: a
redelivered batch checks only the slots it finds unrecorded.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import dramatiq

from pulse import events
from pulse import logging as pulse_logging
from pulse.config import get_settings
from pulse.db import db
from pulse.errors import PermanentError
from pulse.grid import parse_slot
from pulse.net import AddressPolicy
from pulse.uptime import record
from pulse.uptime.check import Outcome
from pulse.uptime.check import run as run_check

logger = logging.getLogger(__name__)
POLICY = AddressPolicy.from_settings(get_settings())
CONCURRENT_CHECKS = 256  # requests in flight per worker process: 16 threads of full batches never wait
_requests = ThreadPoolExecutor(CONCURRENT_CHECKS, thread_name_prefix="check")


@dramatiq.actor(queue_name="uptime", time_limit=120_000, max_retries=2)
def check(component_id: int, scheduled_at: str) -> None:
    """Check one component for the slot ``scheduled_at`` (ISO 8601) and record the outcome."""
    _check_all([(component_id, parse_slot(scheduled_at))])


@dramatiq.actor(queue_name="uptime", time_limit=120_000, max_retries=2)
def checks(batch: list[list]) -> None:
    """Check each ``[component_id, scheduled_at]`` of ``batch`` at once and record the outcomes.
    Its log lines carry the ``componentIds`` of the batch."""
    pairs = isinstance(batch, list) and all(isinstance(item, list) and len(item) == 2 for item in batch)
    if not pairs or not all(isinstance(component_id, int) for component_id, _ in batch):
        raise PermanentError("batch is not a list of [component_id, scheduled_at] pairs")
    pulse_logging.bind(componentIds=[component_id for component_id, _ in batch])
    _check_all([(component_id, parse_slot(scheduled_at)) for component_id, scheduled_at in batch])


def _check_all(slots: Sequence[tuple[int, datetime]]) -> None:
    due = []
    for (component_id, slot), loaded in zip(slots, record.load_all(slots), strict=True):
        if loaded is None or not loaded.checkable:
            logger.info("Component %s is gone, paused or not an endpoint: check skipped.", component_id)
        elif not loaded.recorded:  # else a redelivered message: this slot is recorded already
            due.append((loaded, slot))
    if len(due) == 1:
        pulse_logging.bind(organizationId=due[0][0].component.organization_id)
    outcomes = _run([loaded for loaded, _ in due])
    with db.atomic():  # one commit for the batch
        written = record.save_all([(*check, outcome) for check, outcome in zip(due, outcomes, strict=True)])
    events.publish(written)


def _run(due: list[record.Loaded]) -> list[Outcome]:
    """Each check's outcome: in this thread for one, at once on the request pool for several."""
    if len(due) == 1:
        return [run_check(due[0].request, due[0].conditions, due[0].extract, POLICY)]
    futures = [_requests.submit(run_check, d.request, d.conditions, d.extract, POLICY) for d in due]
    return [future.result() for future in futures]
