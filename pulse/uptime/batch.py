"""A batch of checks, from the slots a message names to the events their results wrote.

The components are read in one query, their checks (of any kind: `pulse.uptime.kinds`) run at
once on a pool of threads that only make checks (`CONCURRENT_CHECKS` per process, started on
first use in the worker process), and their results are written in one transaction (most of
them in one statement), so RabbitMQ, dramatiq and PostgreSQL's round trips and commit are paid
once a batch, not once a check. Each check is still recorded once per component and slot: a
redelivered batch checks only the slots it finds unrecorded. Components checked from locations
are given to the batch's dispatcher instead (``send_located``: `pulse.locations.dispatch.send`,
as the actor gives it: uptime knows nothing of locations), while the checks made here are under way:
whatever becomes of that, the checks made here are recorded first, and only then is a failure to
send raised (the message retried: the recorded slots are not checked again).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Protocol

from pulse import logging as pulse_logging
from pulse.config import get_settings
from pulse.db import db
from pulse.models import utcnow
from pulse.net import AddressPolicy
from pulse.uptime import record
from pulse.uptime.check import CheckResult

logger = logging.getLogger(__name__)

# Checks in flight per worker process: a batch's checks start at their own slots, over its 500 ms,
# so 16 threads of full batches (64 each) rarely have more than this under way.
CONCURRENT_CHECKS = 256
# The longest a batch that came ahead of its slots holds a check back for its slot: a worker whose
# clock runs behind the scheduler's does not hold its checks back for long.
AHEAD_MAX_S = 1.0


Located = Callable[[Sequence[tuple[record.Loaded, datetime]]], None]


def check_all(slots: Sequence[tuple[int, datetime]], send_located: Located) -> list[int]:
    """Check each (component id, slot) not recorded yet and record the results in one
    transaction; returns the ids of the events written, to publish once it committed. The
    (component, slot)s of components checked from locations go to ``send_located`` instead."""
    due = []
    for (component_id, slot), loaded in zip(slots, record.load_all(slots), strict=True):
        if loaded is None or not loaded.checkable:
            logger.info("Component %s is gone, paused or not an endpoint: check skipped.", component_id)
        elif not loaded.recorded:  # else a redelivered message: this slot is recorded already
            due.append((loaded, slot))
    if len(due) == 1:
        pulse_logging.bind(organizationId=due[0][0].component.organization_id)
    located = [(loaded, slot) for loaded, slot in due if loaded.locations]
    due = [(loaded, slot) for loaded, slot in due if not loaded.locations]
    results = start_all(due) if located else None  # under way while the locations' batches go
    try:
        send_located(located)  # checked from their locations, whose results come back later
    finally:  # whatever became of that, the checks made here are recorded before it is raised
        found = [future.result() for future in results] if results is not None else run_all(due)
        with db.atomic():  # one commit for the batch
            written = record.record_all([(*check, result) for check, result in zip(due, found, strict=True)])
    return written


class Runs(Protocol):
    def run(self, policy: AddressPolicy) -> CheckResult: ...


def run_all(due: Sequence[tuple[Runs, datetime]]) -> list[CheckResult]:
    """Each (check, slot)'s result, each check started at its slot, or at once if that passed: the
    scheduler sends a batch ahead of its slots (`schedules/uptime.py`), so that gathering checks
    into one message makes none of them late. In this thread for one, on the request pool for several."""
    if len(due) == 1:
        runs, slot = due[0]
        _wait_for(slot, time.monotonic() + AHEAD_MAX_S)
        return [runs.run(_policy())]
    return [future.result() for future in start_all(due)]


def start_all(due: Sequence[tuple[Runs, datetime]]) -> list[Future[CheckResult]]:
    """Start each (check, slot) on the request pool at its slot (as `run_all`); their futures, in order."""
    policy, latest = _policy(), time.monotonic() + AHEAD_MAX_S
    futures = {}
    for n in sorted(range(len(due)), key=lambda n: due[n][1]):
        runs, slot = due[n]
        _wait_for(slot, latest)
        futures[n] = _requests().submit(runs.run, policy)
    return [futures[n] for n in range(len(due))]


def _wait_for(slot: datetime, latest: float) -> None:
    """Sleep until ``slot``, or at the latest until the monotonic time ``latest``."""
    wait = min((slot - utcnow()).total_seconds(), latest - time.monotonic())
    if wait > 0:
        time.sleep(wait)


@functools.cache
def _policy() -> AddressPolicy:
    return AddressPolicy.from_settings(get_settings())


@functools.cache
def _requests() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(CONCURRENT_CHECKS, thread_name_prefix="check")
