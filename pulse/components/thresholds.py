"""Thresholds on a number (a metrics query's, a calculated metric's) and what they make a
component observe, through the state machine uptime checks use (`pulse.components.changes`).

`ThresholdsSpec` reads them from the file (a metric's or a calculated metric's ``thresholds:``);
`Thresholds` is the one value both domains store (`COLUMNS`, on ``metrics_query`` and
``calculated_metric``) and judge with.

The rules:
- a value past ``critical`` (above it, or below it with ``direction: below``) observes
  ``critical_status`` (MAJOR_OUTAGE unless set to PARTIAL_OUTAGE); past ``warning``,
  DEGRADED_PERFORMANCE; within both, OPERATIONAL;
- the component changes after ``for_count`` such observations in a row (``for:`` in the file)
  and comes back to OPERATIONAL after ``recover_count`` good ones (``recover:``);
- no value (no data, or a stale input) is never healthy: with ``no_data: keep`` (the default) it
  leaves the status as it is and starts the good streak over; ``no_data: degraded`` and
  ``no_data: outage`` observe DEGRADED_PERFORMANCE or MAJOR_OUTAGE.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from pulse.components import changes
from pulse.components.status import DEGRADED, MAJOR_OUTAGE, OPERATIONAL
from pulse.models import Component
from pulse.models.metrics import CRITICAL, NO_DATA, OK, WARNING
from pulse.spec import Strict

NO_DATA_SEEN = {"keep": None, "degraded": DEGRADED, "outage": MAJOR_OUTAGE}


class ThresholdsSpec(Strict):
    """``thresholds:`` in the file."""

    direction: Literal["above", "below"] = "above"
    warning: float | None = None
    critical: float | None = None
    for_: int = Field(1, ge=1, le=100, alias="for")
    recover: int = Field(1, ge=1, le=100)
    critical_status: Literal["MAJOR_OUTAGE", "PARTIAL_OUTAGE"] = "MAJOR_OUTAGE"

    @model_validator(mode="after")
    def _ordered(self) -> ThresholdsSpec:
        warning, critical = self.warning, self.critical
        if warning is not None and critical is not None:
            if (critical < warning) if self.direction == "above" else (critical > warning):
                side = "above" if self.direction == "above" else "below"
                raise ValueError(f"critical must be {side} warning when the direction is {self.direction}")
        return self


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """A number's thresholds and its no-data rule, as stored: each field is a column."""

    direction: str
    warning: float | None
    critical: float | None
    critical_status: str
    for_count: int
    recover_count: int
    no_data: str

    @classmethod
    def of(cls, spec: ThresholdsSpec, no_data: str) -> Thresholds:
        """The thresholds the file gives (``thresholds:`` and ``no_data:``)."""
        return cls(spec.direction, spec.warning, spec.critical, spec.critical_status, spec.for_, spec.recover, no_data)

    @classmethod
    def of_row(cls, values: Sequence[Any]) -> Thresholds:
        """The thresholds of the values `columns` selects, in its order."""
        return cls(*values)

    def fields(self) -> dict[str, Any]:
        """The columns and their values, to insert or update a row."""
        return dataclasses.asdict(self)

    def judge(self, value: float | None) -> str:
        """The state of one value: ok, warning, critical, or no data."""
        if value is None:
            return NO_DATA

        def past(threshold: float | None) -> bool:
            if threshold is None:
                return False
            return value > threshold if self.direction == "above" else value < threshold

        return CRITICAL if past(self.critical) else WARNING if past(self.warning) else OK

    def seen(self, state: str) -> str | None:
        """The component status a state observes; None for no value that leaves the status as it is."""
        if state in (OK, WARNING, CRITICAL):
            return {OK: OPERATIONAL, WARNING: DEGRADED, CRITICAL: self.critical_status}[state]
        return NO_DATA_SEEN[self.no_data]

    def reason(self, name: str, unit: str, state: str, value: float | None, note: str | None) -> str:
        """Why the value of ``name`` observed what it did, in one line for the status change and
        its incident."""
        if value is None:
            return f"{name}: no data ({note or 'no value'})"
        shown = f"{name} is {value:g}{unit}"
        if state == OK:
            return f"{shown}, within its thresholds"
        threshold = self.critical if state == CRITICAL else self.warning
        return f"{shown}, {self.direction} its {state} threshold {threshold:g}{unit}"

    def observe(self, component_id: int, state: str, why: str, now: datetime) -> list[int]:
        """Apply what ``state`` observes to the component, inside the caller's transaction.
        Returns the ids of the events written, to publish after commit."""
        observed = self.seen(state)
        if observed is None:  # no value: not a failure, and no good news either
            Component.update(consecutive_successes=0).where(Component.id == component_id).execute()
            return []
        component = changes.lock(component_id, failure_threshold=self.for_count, success_threshold=self.recover_count)
        if component is None:
            return []
        return changes.apply(component, observed, why, now)


COLUMNS = tuple(field.name for field in dataclasses.fields(Thresholds))


def columns(table: str) -> str:
    """`COLUMNS` in a SELECT, of the table aliased ``table``."""
    return ", ".join(f"{table}.{name}" for name in COLUMNS)


def declared(row: Any) -> dict[str, Any]:
    """A row's thresholds (a metrics query's, a calculated metric's) as the file declares them
    (``thresholds:``)."""
    return {
        "direction": row.direction,
        "warning": row.warning,
        "critical": row.critical,
        "for": row.for_count,
        "recover": row.recover_count,
        "critical_status": row.critical_status,
    }
