"""One poll of one metrics query: run it against its integration, then record what it found.

A poll writes one `MetricDataPoint` per query and scheduled time (unique, so a redelivered poll
writes nothing twice), the query's state (ok, warning, critical, no data) and, when the query
drives a component, the status change it means, through the state machine uptime checks use
(`pulse.components.changes`): thresholds, incidents and events alike.

The rules:
- a value past ``critical`` (above it, or below it with ``direction: below``) observes
  ``critical_status`` (MAJOR_OUTAGE unless set to PARTIAL_OUTAGE); past ``warning``,
  DEGRADED_PERFORMANCE; within both, OPERATIONAL;
- the component changes after ``failure_threshold`` such observations in a row (``for:`` in the
  file) and comes back to OPERATIONAL after ``success_threshold`` good ones;
- no data (an empty result, NaN, an infinity, or the vendor still failing at the last retry) is
  never healthy: with ``no_data: keep`` (the default) it leaves the status as it is and starts the
  good streak over; ``no_data: degraded`` and ``no_data: outage`` observe DEGRADED_PERFORMANCE or
  MAJOR_OUTAGE.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from pulse.components import changes
from pulse.components.status import DEGRADED, MAJOR_OUTAGE, OPERATIONAL
from pulse.db import db
from pulse.metrics.integrations import INTEGRATIONS, Sample
from pulse.models import Component, Integration, MetricsQuery, utcnow
from pulse.models.metrics import CRITICAL, NO_DATA, OK, WARNING
from pulse.net import AddressPolicy

NO_DATA_SEEN = {"keep": None, "degraded": DEGRADED, "outage": MAJOR_OUTAGE}


@dataclasses.dataclass(frozen=True)
class Loaded:
    """What a poll needs of its query, read in one statement before the vendor is called."""

    id: int
    organization_id: int
    name: str
    pollable: bool  # not paused
    kind: str  # the integration's type
    integration_id: int
    settings: dict[str, Any]
    query: str
    options: dict[str, Any]
    unit: str
    component_id: int | None
    direction: str
    warning: float | None
    critical: float | None
    critical_status: str
    failure_threshold: int
    success_threshold: int
    no_data: str
    recorded: bool  # this slot is recorded already (a redelivered message)


LOAD = """
SELECT q.id, q.organization_id, q.name, NOT q.paused, i.type, i.id, i.settings, q.query, q.options, q.unit,
       q.component_id, q.direction, q.warning, q.critical, q.critical_status, q.failure_threshold,
       q.success_threshold, q.no_data,
       EXISTS (SELECT 1 FROM metric_data_point p WHERE p.metrics_query_id = q.id AND p.scheduled_at = %(slot)s)
FROM metrics_query q JOIN integration i ON i.id = q.integration_id
WHERE q.id = %(id)s
"""
# A poll's data point, and the query's state when the point is new and the latest poll applied:
# one statement. Its UPDATE locks the query's row, so two polls of one query finishing together
# apply one after the other, the later slot winning (the condition is checked again on the row a
# concurrent poll committed).
RECORD = """
WITH point AS (
    INSERT INTO metric_data_point (metrics_query_id, scheduled_at, value) VALUES (%(id)s, %(slot)s, %(value)s)
    ON CONFLICT DO NOTHING
    RETURNING metrics_query_id
)
UPDATE metrics_query q SET
    last_polled_at = %(slot)s,
    state = %(state)s,
    last_value = coalesce(%(value)s, q.last_value),
    last_value_at = CASE WHEN %(value)s::float8 IS NULL THEN q.last_value_at ELSE %(slot)s END,
    last_error = CASE WHEN %(value)s::float8 IS NULL THEN q.last_error END
FROM point
WHERE q.id = point.metrics_query_id AND (q.last_polled_at IS NULL OR q.last_polled_at < %(slot)s)
RETURNING q.id
"""


def load(query_id: int, scheduled_at: datetime) -> Loaded | None:
    """The query of a poll, or None if it was deleted."""
    row = db.execute_sql(LOAD, {"id": query_id, "slot": scheduled_at}).fetchone()
    return None if row is None else Loaded(*row)


def run(loaded: Loaded, policy: AddressPolicy, timeout_s: float) -> Sample:
    """Ask the integration; raises `pulse.net.api.ApiError` when it fails."""
    return INTEGRATIONS[loaded.kind].query(loaded.settings, loaded.query, loaded.options, policy, timeout_s)


def judge(loaded: Loaded, value: float | None) -> str:
    """The query's state for one value: ok, warning, critical, or no data."""
    if value is None:
        return NO_DATA

    def past(threshold: float | None) -> bool:
        if threshold is None:
            return False
        return value > threshold if loaded.direction == "above" else value < threshold

    return CRITICAL if past(loaded.critical) else WARNING if past(loaded.warning) else OK


def seen(loaded: Loaded, state: str) -> str | None:
    """The component status a state observes; None for no data that leaves the status as it is."""
    if state == NO_DATA:
        return NO_DATA_SEEN[loaded.no_data]
    return {OK: OPERATIONAL, WARNING: DEGRADED, CRITICAL: loaded.critical_status}[state]


def record(loaded: Loaded, scheduled_at: datetime, sample: Sample) -> list[int]:
    """Record a poll. Returns the ids of the events written, to publish after commit.

    A redelivered poll writes nothing; a poll older than the latest applied one keeps its data
    point but changes nothing. A query that drives no component is recorded in one statement.
    """
    state = judge(loaded, sample.value)
    point = {"id": loaded.id, "slot": scheduled_at, "value": sample.value, "state": state}
    if loaded.component_id is None:
        db.execute_sql(RECORD, point)
        return []
    now = utcnow()
    with db.atomic():
        if db.execute_sql(RECORD, point).fetchone() is None:
            return []  # recorded already, or older than the latest poll applied
        observed = seen(loaded, state)
        if observed is None:  # no data: not a failure, and no good news either
            Component.update(consecutive_successes=0).where(Component.id == loaded.component_id).execute()
            return []
        component = changes.lock(
            loaded.component_id,
            failure_threshold=loaded.failure_threshold,
            success_threshold=loaded.success_threshold,
        )
        if component is None:
            return []
        return changes.apply(component, observed, reason(loaded, state, sample), now)


def failed(loaded: Loaded, error: str) -> None:
    """Note a failed attempt on the query and its integration (`pulse metrics` shows it)."""
    now = utcnow()
    MetricsQuery.update(last_error=error, last_error_at=now).where(MetricsQuery.id == loaded.id).execute()
    Integration.update(last_error=error, last_error_at=now).where(Integration.id == loaded.integration_id).execute()


def reason(loaded: Loaded, state: str, sample: Sample) -> str:
    """Why a poll observed what it did, in one line for the status change and its incident."""
    if sample.value is None:
        return f"{loaded.name}: no data ({sample.note or 'no value'})"
    shown = f"{loaded.name} is {sample.value:g}{loaded.unit}"
    if state == OK:
        return f"{shown}, within its thresholds"
    threshold = loaded.critical if state == CRITICAL else loaded.warning
    return f"{shown}, {loaded.direction} its {state} threshold {threshold:g}{loaded.unit}"
