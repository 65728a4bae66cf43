"""Thresholds on a number (a metrics query's, a calculated metric's) and what they make a
component observe, through the state machine uptime checks use (`pulse.components.changes`).

The rules:
- a value past ``critical`` (above it, or below it with ``direction: below``) observes
  ``critical_status`` (MAJOR_OUTAGE unless set to PARTIAL_OUTAGE); past ``warning``,
  DEGRADED_PERFORMANCE; within both, OPERATIONAL;
- the component changes after ``failure_threshold`` such observations in a row (``for:`` in the
  file) and comes back to OPERATIONAL after ``success_threshold`` good ones;
- no value (no data, or a stale input) is never healthy: with ``no_data: keep`` (the default) it
  leaves the status as it is and starts the good streak over; ``no_data: degraded`` and
  ``no_data: outage`` observe DEGRADED_PERFORMANCE or MAJOR_OUTAGE.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from pulse.components import changes
from pulse.components.status import DEGRADED, MAJOR_OUTAGE, OPERATIONAL
from pulse.models import Component
from pulse.models.metrics import CRITICAL, NO_DATA, OK, WARNING

NO_DATA_SEEN = {"keep": None, "degraded": DEGRADED, "outage": MAJOR_OUTAGE}


class Limits(Protocol):
    """What a thresholded number carries (a loaded metrics query or calculated metric)."""

    @property
    def name(self) -> str: ...
    @property
    def unit(self) -> str: ...
    @property
    def component_id(self) -> int | None: ...
    @property
    def direction(self) -> str: ...
    @property
    def warning(self) -> float | None: ...
    @property
    def critical(self) -> float | None: ...
    @property
    def critical_status(self) -> str: ...
    @property
    def failure_threshold(self) -> int: ...
    @property
    def success_threshold(self) -> int: ...
    @property
    def no_data(self) -> str: ...


def judge(limits: Limits, value: float | None) -> str:
    """The state of one value: ok, warning, critical, or no data."""
    if value is None:
        return NO_DATA

    def past(threshold: float | None) -> bool:
        if threshold is None:
            return False
        return value > threshold if limits.direction == "above" else value < threshold

    return CRITICAL if past(limits.critical) else WARNING if past(limits.warning) else OK


def seen(limits: Limits, state: str) -> str | None:
    """The component status a state observes; None for no value that leaves the status as it is."""
    if state in (OK, WARNING, CRITICAL):
        return {OK: OPERATIONAL, WARNING: DEGRADED, CRITICAL: limits.critical_status}[state]
    return NO_DATA_SEEN[limits.no_data]


def reason(limits: Limits, state: str, value: float | None, note: str | None) -> str:
    """Why a value observed what it did, in one line for the status change and its incident."""
    if value is None:
        return f"{limits.name}: no data ({note or 'no value'})"
    shown = f"{limits.name} is {value:g}{limits.unit}"
    if state == OK:
        return f"{shown}, within its thresholds"
    threshold = limits.critical if state == CRITICAL else limits.warning
    return f"{shown}, {limits.direction} its {state} threshold {threshold:g}{limits.unit}"


def observe(limits: Limits, state: str, why: str, now: datetime) -> list[int]:
    """Apply what ``state`` observes to the component ``limits`` drives, inside the caller's
    transaction. Returns the ids of the events written, to publish after commit."""
    assert limits.component_id is not None
    observed = seen(limits, state)
    if observed is None:  # no value: not a failure, and no good news either
        Component.update(consecutive_successes=0).where(Component.id == limits.component_id).execute()
        return []
    component = changes.lock(
        limits.component_id, failure_threshold=limits.failure_threshold, success_threshold=limits.success_threshold
    )
    if component is None:
        return []
    return changes.apply(component, observed, why, now)
