"""One poll of one metrics query: run it against its integration, then record what it found
(`poll_slot`, all the `poll` actor does).

A poll writes one `MetricDataPoint` per query and scheduled time (unique, so a redelivered poll
writes nothing twice), the query's state (ok, warning, critical, no data) and, when the query
drives a component, the status change it means, through the state machine uptime checks use
(`pulse.components.changes`): thresholds, incidents and events alike.

The rules of the thresholds are in `pulse.components.thresholds`.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from datetime import datetime
from typing import Any

import dramatiq

from pulse import logging as pulse_logging
from pulse.components import thresholds
from pulse.components.thresholds import Thresholds
from pulse.config import get_settings
from pulse.db import db
from pulse.errors import PermanentError, TransientError
from pulse.metrics.integrations import INTEGRATIONS, Sample
from pulse.models import Integration, MetricsQuery, utcnow
from pulse.net import AddressPolicy
from pulse.net.api import ApiError

logger = logging.getLogger(__name__)

TIMEOUT_S = 10.0  # seconds for one call to the vendor: connecting, sending, reading the answer
INTERNAL = "internal error (see the worker's log)"


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
    recorded: bool  # this slot is recorded already (a redelivered message)
    thresholds: Thresholds


_COLUMNS = [field.name for field in dataclasses.fields(Loaded)][:-1]  # the columns LOAD reads first, in order
LOAD = f"""
SELECT q.id, q.organization_id, q.name, NOT q.paused, i.type, i.id, i.settings, q.query, q.options, q.unit,
       q.component_id,
       EXISTS (SELECT 1 FROM metric_data_point p WHERE p.metrics_query_id = q.id AND p.scheduled_at = %(slot)s),
       {thresholds.columns("q")}
FROM metrics_query q JOIN integration i ON i.id = q.integration_id
WHERE q.id = %(id)s
"""
# A poll's data point, and the query's state when the point is new and the latest poll applied:
# one statement. Its UPDATE locks the query's row, so two polls of one query finishing together
# apply one after the other, the later slot winning (the condition is checked again on the row a
# concurrent poll committed). What reads the query's latest value learns of a new one in this
# statement, from the table's triggers.
RECORD = """
WITH point AS (
    INSERT INTO metric_data_point (metrics_query_id, scheduled_at, value) VALUES (%(id)s, %(slot)s, %(value)s)
    ON CONFLICT DO NOTHING
    RETURNING metrics_query_id
), recorded AS (
    UPDATE metrics_query q SET
        last_polled_at = %(slot)s,
        state = %(state)s,
        last_value = coalesce(%(value)s, q.last_value),
        last_value_at = CASE WHEN %(value)s::float8 IS NULL THEN q.last_value_at ELSE %(slot)s END,
        last_error = CASE WHEN %(value)s::float8 IS NULL THEN q.last_error END
    FROM point
    WHERE q.id = point.metrics_query_id AND (q.last_polled_at IS NULL OR q.last_polled_at < %(slot)s)
    RETURNING q.id
)
SELECT id FROM recorded
"""


@dataclasses.dataclass(frozen=True)
class Polled:
    """What a poll leaves its actor: the events to publish once committed, then the failure to
    raise (None: the poll is done)."""

    events: list[int] = dataclasses.field(default_factory=list)
    failure: BaseException | None = None


def poll_slot(query_id: int, slot: datetime, *, final: bool) -> Polled:
    """Poll one query for one slot and record what it found, unless the slot is recorded already
    or the query is gone or paused. ``final``: no retry follows this attempt.

    A failure is shown on the query and its integration (`pulse metrics`), the vendor's text quoted
    (redacted and bounded, `pulse.net.api.quote`). A transient one is retried (a 429 when the
    vendor says); a permanent one (bad credentials, a bad query, an answer that is not the
    vendor's JSON) is dead-lettered. When no retry follows, the slot is recorded as having no
    data, which the thresholds' no-data rule judges; its reason, which may reach subscribers,
    names the vendor and nothing it said ("Prometheus unavailable"). Any other exception is a bug:
    retried like a transient failure, it shows as an internal error and, on the last attempt,
    records no data all the same.
    """
    loaded = load(query_id, slot)
    if loaded is None or not loaded.pollable:
        logger.info("Metrics query %s is gone or paused: poll skipped.", query_id)
        return Polled()
    pulse_logging.bind(organizationId=loaded.organization_id, componentId=loaded.component_id)
    if loaded.recorded:
        return Polled()  # a redelivered message: this slot is recorded already
    try:
        sample = run(loaded, _policy(), TIMEOUT_S)
    except ApiError as e:
        failed(loaded, str(e))
        if not e.permanent and not final:
            if e.retry_after is not None:  # a 429: come back when the vendor says
                return Polled(failure=dramatiq.Retry(str(e), delay=round(e.retry_after * 1000)))
            return Polled(failure=TransientError(str(e)))
        written = record(loaded, slot, unavailable(loaded))
        if e.permanent:
            return Polled(written, PermanentError(str(e)))  # the dead letters say so in one line
        logger.warning("%s: %s; recorded as no data for %s.", loaded.name, e, slot.isoformat())
        return Polled(written)
    except Exception as e:  # noqa: BLE001 - a bug (reading the reply, say): no data all the same, raised for its traceback
        failed(loaded, INTERNAL)
        return Polled(record(loaded, slot, unavailable(loaded)) if final else [], e)
    return Polled(record(loaded, slot, sample))


@functools.cache
def _policy() -> AddressPolicy:
    return AddressPolicy.from_settings(get_settings())


def load(query_id: int, scheduled_at: datetime) -> Loaded | None:
    """The query of a poll, or None if it was deleted."""
    row = db.execute_sql(LOAD, {"id": query_id, "slot": scheduled_at}).fetchone()
    if row is None:
        return None
    columns = dict(zip(_COLUMNS, row, strict=False))
    return Loaded(**columns, thresholds=Thresholds.of_row(row[len(_COLUMNS) :]))


def run(loaded: Loaded, policy: AddressPolicy, timeout_s: float) -> Sample:
    """Ask the integration; raises `pulse.net.api.ApiError` when it fails."""
    return INTEGRATIONS[loaded.kind].query(loaded.settings, loaded.query, loaded.options, policy, timeout_s)


def record(loaded: Loaded, scheduled_at: datetime, sample: Sample) -> list[int]:
    """Record a poll. Returns the ids of the events written, to publish after commit.

    A redelivered poll writes nothing; a poll older than the latest applied one keeps its data
    point but changes nothing. A query that drives no component is recorded in one statement.
    """
    state = loaded.thresholds.judge(sample.value)
    point = {"id": loaded.id, "slot": scheduled_at, "value": sample.value, "state": state}
    if loaded.component_id is None:
        db.execute_sql(RECORD, point)
        return []
    with db.atomic():
        if db.execute_sql(RECORD, point).fetchone() is None:
            return []  # recorded already, or older than the latest poll applied
        why = loaded.thresholds.reason(loaded.name, loaded.unit, state, sample.value, sample.note)
        return loaded.thresholds.observe(loaded.component_id, state, why, utcnow())


def unavailable(loaded: Loaded) -> Sample:
    """The no data of a poll that failed: its reason names the vendor, never what the vendor said
    (it reaches subscribers; the vendor's text is the query's ``last_error``, for operators)."""
    return Sample(None, f"{INTEGRATIONS[loaded.kind].label} unavailable")


def failed(loaded: Loaded, error: str) -> None:
    """Note a failed attempt on the query and its integration (`pulse metrics` shows it)."""
    now = utcnow()
    MetricsQuery.update(last_error=error, last_error_at=now).where(MetricsQuery.id == loaded.id).execute()
    Integration.update(last_error=error, last_error_at=now).where(Integration.id == loaded.integration_id).execute()
