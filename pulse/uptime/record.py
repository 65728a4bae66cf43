"""Recording a check: the check row (unique per component and scheduled time, so a redelivered
message writes nothing twice), its extracted values, and what it means for the component.

Most checks leave the status as it was: they are recorded in one guarded statement, several at
once. A change of status, a late result or a concurrent check takes the component's row lock and
applies the change once (`pulse.components.changes`). Both write the check rows and their values
with the same SQL.

A slot recorded as unknown (nobody checked it in time: `pulse.uptime.missed`) is not recorded
yet: a check of it that comes after all replaces that row and is applied like any other.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pulse.components import changes
from pulse.components.snapshot import COLUMNS, Snapshot
from pulse.components.status import UNKNOWN
from pulse.db import db
from pulse.models import utcnow
from pulse.net import AddressPolicy
from pulse.uptime import domains, expiry
from pulse.uptime.check import CheckResult
from pulse.uptime.kinds import KINDS, Stored


@dataclasses.dataclass(frozen=True)
class Loaded:
    """What a check needs of its component, read in one query before the check is made."""

    component: Snapshot
    checkable: bool  # an endpoint, not paused
    kind: str  # its check kind, a name of `pulse.uptime.kinds.KINDS`
    target: Any  # what its kind's check connects to (`Kind.target`): a `pulse.net.Request` for http
    conditions: list[str]
    extract: dict[str, str]
    last_checked_at: datetime | None
    recorded: bool  # this slot is recorded already (a redelivered message)
    warned_days: int = 0  # its farthest certificate warning, in days before expiry (0: none)
    domain_days: int = 0  # its farthest domain warning, in days (0: none)
    domain_expires_at: datetime | None = None  # its domain's cached expiry (pulse.uptime.domains)
    stored: Stored | None = None  # its target columns, as `target` was made from them
    locations: tuple[str, ...] = ()  # checked from these (pulse.locations); none: here
    quorum: int | None = None  # of its locations; None: a majority
    interval_s: int = 60

    def run(self, policy: AddressPolicy) -> CheckResult:
        """Check the component now, by its kind (no database)."""
        return KINDS[self.kind].run(self.target, self.conditions, self.extract, policy)


# A row of a check made: not one of a slot nobody checked, which a check replaces.
_KNOWN = f"AND u.outcome <> '{UNKNOWN}'"
# One row per (id, slot) pair of the arrays, numbered from 1 in their order; none for a deleted component.
LOAD = f"""
SELECT {COLUMNS}, c.failure_threshold, c.success_threshold,
       c.type = 'ENDPOINT' AND NOT c.paused, c.kind, c.method, c.url, c.headers, c.forward_headers, c.body,
       c.timeout_ms, c.target, c.conditions, c.extract, c.last_checked_at, c.locations, c.quorum, c.interval_seconds,
       coalesce((SELECT max(d) FROM unnest(c.certificate_warning_days) AS d), 0),
       coalesce((SELECT max(d) FROM unnest(c.domain_warning_days) AS d), 0),
       (SELECT d.expires_at FROM domain_expiry d WHERE d.domain = c.domain),
       EXISTS (SELECT 1 FROM uptime_check u WHERE u.component_id = c.id AND u.scheduled_at = s.slot {_KNOWN}), s.n
FROM unnest(%(ids)s::bigint[], %(slots)s::timestamptz[]) WITH ORDINALITY AS s (id, slot, n)
JOIN component c ON c.id = s.id
"""
# FOR NO KEY UPDATE: the check row's foreign key (FOR KEY SHARE) does not wait for it.
LOAD_LOCKED = LOAD + "FOR NO KEY UPDATE OF c"


def load(component_id: int, scheduled_at: datetime, *, lock: bool = False) -> Loaded | None:
    """The component of a check, or None if it was deleted. ``lock``: hold its row until commit."""
    return load_all([(component_id, scheduled_at)], lock=lock)[0]


def load_all(checks: Sequence[tuple[int, datetime]], *, lock: bool = False) -> list[Loaded | None]:
    """The component of each (component id, slot) check, in one query: None where it was deleted."""
    if not checks:
        return []
    ids, slots = zip(*checks, strict=True)
    query = db.execute_sql(LOAD_LOCKED if lock else LOAD, {"ids": list(ids), "slots": list(slots), "now": utcnow()})
    found = {values[-1]: _loaded(values[:-1]) for values in query.fetchall()}
    return [found.get(n) for n in range(1, len(checks) + 1)]


def _loaded(values: Sequence[Any]) -> Loaded:
    snapshot = Snapshot.of(values[:9], failure_threshold=values[9], success_threshold=values[10])
    checkable, kind, method, url, headers, forward, body, timeout_ms, target = values[11:20]
    texts, extract, last_checked_at, locations, quorum, interval_s = values[20:26]
    warned_days, domain_days, domain_expires_at, recorded = values[26:]
    stored = Stored(method, url, headers or {}, forward, body, timeout_ms / 1000, target)
    return Loaded(
        component=snapshot,
        checkable=checkable,
        kind=kind,
        target=KINDS[kind].target(stored),
        conditions=texts,
        extract=extract or {},
        last_checked_at=last_checked_at,
        recorded=recorded,
        warned_days=warned_days,
        domain_days=domain_days,
        domain_expires_at=domain_expires_at,
        stored=stored,
        locations=tuple(locations),
        quorum=quorum,
        interval_s=interval_s,
    )


# The checks to write, one row each: what `_values` gives, as arrays of equal length.
_COLUMNS = {
    "id": "bigint", "slot": "timestamptz", "started": "timestamptz", "code": "integer", "ms": "integer",
    "success": "boolean", "seen": "text", "error": "text", "results": "jsonb",
    # what the fast path's guard compares (unused by the locked path)
    "status": "text", "failures": "integer", "successes": "integer",
    "was_failures": "integer", "was_successes": "integer", "was_checked": "timestamptz",
}  # fmt: skip
# Sent in binary (%b): psycopg dumps a text array element by element in Python, quoting and
# escaping each (the results' JSON most of all), 29 µs a check against 4 in binary.
_BATCH = "batch AS (SELECT * FROM unnest({}) AS batch ({}))".format(
    ", ".join(f"%({name})b::{kind}[]" for name, kind in _COLUMNS.items()), ", ".join(_COLUMNS)
)
# The check rows, written from the rows of {source}, then the check's extracted values if it has
# any (one check only: %(values)s), moving each value's latest (what reads it learns of it in this
# statement, from the table's triggers). ON CONFLICT: the slot is recorded already, and stays so,
# unless as unknown.
_CHECK = f"""checked AS (
    INSERT INTO uptime_check (component_id, scheduled_at, started_at, checked_at, status_code, response_time_ms,
                              success, outcome, error, condition_results)
    SELECT id, slot, started, %(now)s, code, ms, success, seen, error, results
    FROM {{source}}
    ON CONFLICT (component_id, scheduled_at) DO UPDATE
    SET started_at = excluded.started_at, checked_at = excluded.checked_at, status_code = excluded.status_code,
        response_time_ms = excluded.response_time_ms, success = excluded.success, outcome = excluded.outcome,
        error = excluded.error, condition_results = excluded.condition_results
    WHERE uptime_check.outcome = '{UNKNOWN}'
    RETURNING component_id, scheduled_at
)"""
_EXTRACTED = """, points AS (
    INSERT INTO extracted_value_data_point (extracted_value_id, value, scheduled_at, created_at)
    SELECT e.id, x.value::double precision, checked.scheduled_at, %(now)s
    FROM checked
    JOIN extracted_value e ON e.component_id = checked.component_id
    JOIN jsonb_each_text(%(values)s::jsonb) AS x (name, value) ON x.name = e.name
    ON CONFLICT DO NOTHING
    RETURNING extracted_value_id, value, scheduled_at
), latest AS (
    UPDATE extracted_value e SET last_value = points.value, last_at = points.scheduled_at
    FROM points WHERE e.id = points.extracted_value_id AND (e.last_at IS NULL OR e.last_at < points.scheduled_at)
)"""
# The fast path: each component's new counters, guarded by the values they were computed from (so
# a concurrent check makes it change nothing), and the check row only if that update happened.
_UNCHANGED = f"""WITH {_BATCH}, updated AS (
    UPDATE component c
    SET consecutive_failures = batch.failures, consecutive_successes = batch.successes,
        last_checked_at = batch.slot, last_response_time_ms = batch.ms
    FROM batch
    WHERE c.id = batch.id AND c.status = batch.status
      AND c.consecutive_failures = batch.was_failures AND c.consecutive_successes = batch.was_successes
      AND c.last_checked_at IS NOT DISTINCT FROM batch.was_checked
      AND NOT EXISTS (SELECT 1 FROM uptime_check u WHERE u.component_id = batch.id AND u.scheduled_at = batch.slot
                      {_KNOWN})
    RETURNING batch.*
), """ + _CHECK.format(source="updated")
_LOCKED = f"WITH {_BATCH}, " + _CHECK.format(source="batch")
_WRITTEN = " SELECT component_id, scheduled_at FROM checked"
SQL = {
    (False, False): _UNCHANGED + _WRITTEN,
    (False, True): _UNCHANGED + _EXTRACTED + _WRITTEN,
    (True, False): _LOCKED + _WRITTEN,
    (True, True): _LOCKED + _EXTRACTED + _WRITTEN,
}

#: One check to record: its component as loaded, its slot, and its result.
Check = tuple[Loaded, datetime, CheckResult]


def record(loaded: Loaded, scheduled_at: datetime, result: CheckResult) -> list[int]:
    """Record a check. Returns the ids of the events written, to publish."""
    return record_all([(loaded, scheduled_at, result)])


def record_all(checks: Sequence[Check]) -> list[int]:
    """Record checks, in the caller's transaction. Returns the ids of the events written, to publish.

    Most checks leave the status as it was: those that extract nothing are recorded together in
    one guarded statement, the others in one each. A change of status, a late result or a
    concurrent check (its guard failed) takes `record_locked`, with the component locked.
    The certificates the checks saw warn of their expiry, once each (`pulse.uptime.expiry`), and
    so do their components' domains, by their cached expiry (`pulse.uptime.domains`).
    """
    fast = [(check, values) for check in checks if (values := _guarded(*check)) is not None]
    written = _write([values for (_, _, result), values in fast if not result.extracted], locked=False)
    for (_, _, result), values in fast:
        if result.extracted:
            written |= _write([values], locked=False, extracted=result.extracted)
    changed = [event for loaded, slot, result in checks if (loaded.component.id, slot) not in written
               for event in record_locked(loaded.component.id, slot, result)]  # fmt: skip
    seen = [(loaded.component.id, loaded.target, result.response) for loaded, _, result in checks
            if expiry.due(result.response, loaded.warned_days)]  # fmt: skip
    named = [(loaded.component.id, expires_at) for loaded, _, _ in checks
             if (expires_at := loaded.domain_expires_at) and domains.due(expires_at, loaded.domain_days)]  # fmt: skip
    return changed + expiry.warn(seen) + domains.warn(named)


def _guarded(loaded: Loaded, scheduled_at: datetime, result: CheckResult) -> dict[str, Any] | None:
    """The fast path's values for a check that leaves the status as it was and is the latest, else None."""
    after = loaded.component.after(result.seen)
    if after.status != loaded.component.state.status:
        return None
    if loaded.last_checked_at is not None and scheduled_at <= loaded.last_checked_at:
        return None
    return _values(loaded.component.id, scheduled_at, result) | {
        "status": loaded.component.state.status,
        "failures": after.failures,
        "successes": after.successes,
        "was_failures": loaded.component.state.failures,
        "was_successes": loaded.component.state.successes,
        "was_checked": loaded.last_checked_at,
    }


def record_locked(component_id: int, scheduled_at: datetime, result: CheckResult) -> list[int]:
    """Record a check with the component locked. Returns the ids of the events written (to publish
    after commit).

    The component row is locked first, so two checks of one component finishing together apply
    one after the other; a result older than the latest applied one is kept but changes nothing.
    """
    with db.atomic():
        loaded = load(component_id, scheduled_at, lock=True)
        if loaded is None:  # deleted since the check was sent
            return []
        values = _values(component_id, scheduled_at, result)
        if not _write([values], locked=True, extracted=result.extracted):
            return []  # this check was recorded already (a redelivered message)
        if loaded.last_checked_at is not None and scheduled_at <= loaded.last_checked_at:
            return []
        return changes.apply(
            loaded.component,
            result.seen,
            result.reason,
            values["now"],
            last_checked_at=scheduled_at,
            last_response_time_ms=values["ms"],
        )


def _values(component_id: int, scheduled_at: datetime, result: CheckResult) -> dict[str, Any]:
    return {
        "id": component_id,
        "slot": scheduled_at,
        "started": result.started_at,
        "now": utcnow(),
        "code": result.response.status,
        "ms": round(result.response.response_time_ms),
        "success": result.success,
        "seen": result.seen,
        "error": result.error,
        "results": json.dumps([r.as_dict() for r in result.results]),
    }


def _write(
    checks: list[dict[str, Any]], *, locked: bool, extracted: dict[str, float] | None = None
) -> set[tuple[int, datetime]]:
    """Write the check rows (and one check's ``extracted`` values); returns the (component id,
    slot) of those written, leaving out those recorded already or whose guard failed."""
    if not checks:
        return set()
    arrays: dict[str, Any] = {name: [values.get(name) for values in checks] for name in _COLUMNS}
    arrays.update(now=checks[0]["now"], values=json.dumps(extracted or {}))
    return set(db.execute_sql(SQL[locked, bool(extracted)], arrays).fetchall())
