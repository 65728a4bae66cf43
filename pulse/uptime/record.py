"""Recording a check: the check row (unique per component and scheduled time, so a redelivered
message writes nothing twice), its extracted values, and what it means for the component.

Most checks leave the status as it was: they are recorded in one guarded statement. A change of
status, a late result or a concurrent check takes the component's row lock and applies the change
once (`pulse.components.changes`). Both write the check row and its values with the same SQL.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from typing import Any

from pulse.calculated import due
from pulse.components import changes
from pulse.db import db
from pulse.models import utcnow
from pulse.net import Request
from pulse.uptime.check import Outcome


@dataclasses.dataclass(frozen=True)
class Loaded:
    """What a check needs of its component, read in one query before the request is made."""

    component: changes.Snapshot
    checkable: bool  # an endpoint, not paused
    request: Request
    conditions: list[str]
    extract: dict[str, str]
    last_checked_at: datetime | None
    recorded: bool  # this slot is recorded already (a redelivered message)


LOAD = f"""
SELECT {changes.COLUMNS}, c.failure_threshold, c.success_threshold,
       c.type = 'ENDPOINT' AND NOT c.paused, c.method, c.url, c.headers, c.forward_headers, c.body, c.timeout_ms,
       c.conditions, c.extract, c.last_checked_at,
       EXISTS (SELECT 1 FROM uptime_check u WHERE u.component_id = c.id AND u.scheduled_at = %(slot)s)
FROM component c
WHERE c.id = %(id)s
"""
# FOR NO KEY UPDATE: the check row's foreign key (FOR KEY SHARE) does not wait for it.
LOAD_LOCKED = LOAD + "FOR NO KEY UPDATE OF c"


def load(component_id: int, scheduled_at: datetime, *, lock: bool = False) -> Loaded | None:
    """The component of a check, or None if it was deleted. ``lock``: hold its row until commit."""
    row = db.execute_sql(LOAD_LOCKED if lock else LOAD, {"id": component_id, "slot": scheduled_at, "now": utcnow()})
    values = row.fetchone()
    if values is None:
        return None
    snapshot = changes.Snapshot.of(values[:9], failure_threshold=values[9], success_threshold=values[10])
    checkable, method, url, headers, forward, body, timeout_ms, texts, extract, last_checked_at, recorded = values[11:]
    return Loaded(
        component=snapshot,
        checkable=checkable,
        request=Request(method, url or "", headers or {}, body, timeout_ms / 1000, forward_headers=forward),
        conditions=texts,
        extract=extract or {},
        last_checked_at=last_checked_at,
        recorded=recorded,
    )


# The check row, written from the rows of {source} (one component id, or none), then the check's
# extracted values if it has any, which mark the calculated metrics they feed. ON CONFLICT: the
# slot is recorded already.
_CHECK = """checked AS (
    INSERT INTO uptime_check (component_id, scheduled_at, started_at, checked_at, status_code, response_time_ms,
                              success, outcome, error, condition_results)
    SELECT id, %(slot)s, %(started)s, %(now)s, %(code)s, %(ms)s, %(success)s, %(seen)s, %(error)s, %(results)s::jsonb
    FROM {source}
    ON CONFLICT DO NOTHING
    RETURNING component_id
)"""
_EXTRACTED = """, points AS (
    INSERT INTO extracted_value_data_point (extracted_value_id, value, scheduled_at, created_at)
    SELECT e.id, v.value::double precision, %(slot)s, %(now)s
    FROM checked
    JOIN extracted_value e ON e.component_id = checked.component_id
    JOIN jsonb_each_text(%(values)s::jsonb) AS v (name, value) ON v.name = e.name
    ON CONFLICT DO NOTHING
    RETURNING extracted_value_id, value
), latest AS (
    UPDATE extracted_value e SET last_value = points.value, last_at = %(slot)s
    FROM points WHERE e.id = points.extracted_value_id AND (e.last_at IS NULL OR e.last_at < %(slot)s)
    RETURNING e.id
), """ + due.marks("v.extracted_value_id IN (SELECT id FROM latest)")
# The fast path: the component's new counters, guarded by the values they were computed from (so a
# concurrent check makes it change nothing), and the check row only if that update happened.
_UNCHANGED = """WITH RECURSIVE updated AS (
    UPDATE component
    SET consecutive_failures = %(failures)s, consecutive_successes = %(successes)s,
        last_checked_at = %(slot)s, last_response_time_ms = %(ms)s
    WHERE id = %(id)s AND status = %(status)s
      AND consecutive_failures = %(was_failures)s AND consecutive_successes = %(was_successes)s
      AND last_checked_at IS NOT DISTINCT FROM %(was_checked)s
      AND NOT EXISTS (SELECT 1 FROM uptime_check WHERE component_id = %(id)s AND scheduled_at = %(slot)s)
    RETURNING id
), """ + _CHECK.format(source="updated")
_LOCKED = "WITH RECURSIVE " + _CHECK.format(source="(SELECT %(id)s::bigint AS id) AS component")
_COUNT = " SELECT count(*) FROM checked"
SQL = {
    (False, False): _UNCHANGED + _COUNT,
    (False, True): _UNCHANGED + _EXTRACTED + _COUNT,
    (True, False): _LOCKED + _COUNT,
    (True, True): _LOCKED + _EXTRACTED + _COUNT,
}


def save(loaded: Loaded, scheduled_at: datetime, outcome: Outcome) -> list[int]:
    """Record a check. Returns the ids of the events written, to publish.

    Most checks leave the status as it was: they are recorded in one guarded statement. A change
    of status, a late result or a concurrent check takes `record`, with the component locked.
    """
    after = loaded.component.after(outcome.seen)
    latest = loaded.last_checked_at is None or scheduled_at > loaded.last_checked_at
    if after.status == loaded.component.state.status and latest:
        values = _values(loaded.component.id, scheduled_at, outcome)
        values.update(
            status=loaded.component.state.status,
            failures=after.failures,
            successes=after.successes,
            was_failures=loaded.component.state.failures,
            was_successes=loaded.component.state.successes,
            was_checked=loaded.last_checked_at,
        )
        if _write(values, locked=False, extracted=bool(outcome.extracted)):
            return []
    return record(loaded.component.id, scheduled_at, outcome)


def record(component_id: int, scheduled_at: datetime, outcome: Outcome) -> list[int]:
    """Record a check with the component locked. Returns the ids of the events written (to publish
    after commit).

    The component row is locked first, so two checks of one component finishing together apply
    one after the other; a result older than the latest applied one is kept but changes nothing.
    """
    with db.atomic():
        loaded = load(component_id, scheduled_at, lock=True)
        if loaded is None:  # deleted since the check was sent
            return []
        values = _values(component_id, scheduled_at, outcome)
        if not _write(values, locked=True, extracted=bool(outcome.extracted)):
            return []  # this check was recorded already (a redelivered message)
        if loaded.last_checked_at is not None and scheduled_at <= loaded.last_checked_at:
            return []
        return changes.apply(
            loaded.component,
            outcome.seen,
            outcome.reason,
            values["now"],
            last_checked_at=scheduled_at,
            last_response_time_ms=values["ms"],
        )


def _values(component_id: int, scheduled_at: datetime, outcome: Outcome) -> dict[str, Any]:
    return {
        "id": component_id,
        "slot": scheduled_at,
        "started": outcome.started_at,
        "now": utcnow(),
        "code": outcome.response.status,
        "ms": round(outcome.response.response_time_ms),
        "success": outcome.success,
        "seen": outcome.seen,
        "error": outcome.error,
        "results": json.dumps([r.as_dict() for r in outcome.results]),
        "values": json.dumps(outcome.extracted),
    }


def _write(values: dict[str, Any], *, locked: bool, extracted: bool) -> bool:
    """Write the check row (and its extracted values); False when nothing was written."""
    row = db.execute_sql(SQL[locked, extracted], values).fetchone()
    return bool(row and row[0])
