"""One uptime check of one component: run it, then record what it means.

`run` does the network part (no transaction open); `record` applies the outcome in one
transaction: the check row (unique per scheduled time, so a redelivered message writes nothing
twice), extracted values, the component's status under its thresholds, incidents, and events.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
from datetime import datetime
from typing import Any

from pulse import conditions, events, incidents, status
from pulse.db import db
from pulse.http import AddressPolicy, Target, fetch
from pulse.models import (
    Component,
    ExtractedValue,
    ExtractedValueDataPoint,
    Incident,
    MaintenanceWindow,
    UptimeCheck,
    utcnow,
)
from pulse.models.event import INCIDENT_OPENED, INCIDENT_RESOLVED, STATUS_CHANGED
from pulse.models.organization import find_by_key

logger = logging.getLogger(__name__)

DEFAULT_CONDITIONS = ("[STATUS] < 400",)


@functools.lru_cache(maxsize=8192)
def parse(text: str) -> conditions.Condition:
    """A condition, parsed once per process."""
    return conditions.parse(text)


@dataclasses.dataclass(frozen=True)
class Outcome:
    started_at: datetime
    response: conditions.Response
    error: str | None
    results: list[conditions.Result]
    seen: str  # the status this check observed
    extracted: dict[str, float]

    @property
    def success(self) -> bool:
        return self.error is None and all(r.success for r in self.results)


def run(check: Target, condition_texts: list[str], extract: dict[str, str], address_policy: AddressPolicy) -> Outcome:
    """Fetch the target and evaluate the conditions (and extractions) on what came back."""
    started_at = utcnow()
    response, error = fetch(check, address_policy)
    parsed = [parse(text) for text in condition_texts or DEFAULT_CONDITIONS]
    results = [conditions.evaluate(c, response) for c in parsed]
    failed = [c.response_time_only for c, r in zip(parsed, results, strict=True) if not r.success]
    extracted = {}
    if error is None:
        for name, path in extract.items():
            value = conditions.extract(path, response)
            number = _number(value)
            if number is not None:
                extracted[name] = number
    return Outcome(started_at, response, error, results, status.observed(failed, error), extracted)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


@dataclasses.dataclass(frozen=True)
class Loaded:
    """What a check needs of its component, read in one query before the request is made."""

    id: int
    organization_id: int
    checkable: bool  # an endpoint, not paused
    target: Target
    conditions: list[str]
    extract: dict[str, str]
    state: status.State
    failure_threshold: int
    success_threshold: int
    last_checked_at: datetime | None
    recorded: bool  # this slot is recorded already (a redelivered message)
    in_maintenance: bool


LOAD = """
SELECT c.id, c.organization_id, c.type = 'ENDPOINT' AND NOT c.paused, c.method, c.url, c.headers, c.body,
       c.timeout_ms, c.conditions, c.extract, c.status, c.consecutive_failures, c.consecutive_successes,
       c.failure_threshold, c.success_threshold, c.last_checked_at,
       EXISTS (SELECT 1 FROM uptime_check u WHERE u.component_id = c.id AND u.scheduled_at = %(slot)s),
       EXISTS (SELECT 1 FROM maintenance_window m
               WHERE m.component_id = c.id AND m.starts_at <= %(now)s AND m.ends_at > %(now)s)
FROM component c
WHERE c.id = %(id)s
"""


def load(component_id: int, scheduled_at: datetime) -> Loaded | None:
    """The component of a check, or None if it was deleted."""
    row = db.execute_sql(LOAD, {"id": component_id, "slot": scheduled_at, "now": utcnow()}).fetchone()
    if row is None:
        return None
    (
        cid,
        organization_id,
        checkable,
        method,
        url,
        headers,
        body,
        timeout_ms,
        texts,
        extract,
        current,
        failures,
        successes,
        failure_threshold,
        success_threshold,
        last_checked_at,
        recorded,
        in_maintenance,
    ) = row
    return Loaded(
        id=cid,
        organization_id=organization_id,
        checkable=checkable,
        target=Target(method=method, url=url or "", headers=headers or {}, body=body, timeout_s=timeout_ms / 1000),
        conditions=texts,
        extract=extract or {},
        state=status.State(current, failures, successes),
        failure_threshold=failure_threshold,
        success_threshold=success_threshold,
        last_checked_at=last_checked_at,
        recorded=recorded,
        in_maintenance=in_maintenance,
    )


def save(loaded: Loaded, scheduled_at: datetime, outcome: Outcome) -> list[int]:
    """Record a check. Returns the ids of the events written, to publish.

    Most checks leave the status as it was: they are recorded in one guarded statement. A change
    of status, a late result or a concurrent check takes `record`, with the component locked.
    """
    after = status.transition(
        loaded.state,
        outcome.seen,
        failure_threshold=loaded.failure_threshold,
        success_threshold=loaded.success_threshold,
        in_maintenance=loaded.in_maintenance,
    )
    latest = loaded.last_checked_at is None or scheduled_at > loaded.last_checked_at
    if after.status == loaded.state.status and latest and _save_unchanged(loaded, after, scheduled_at, outcome):
        return []
    return record(loaded.id, scheduled_at, outcome)


# The component's new counters, guarded by the values they were computed from (so a concurrent
# check makes it change nothing), and the check row, written only if that update happened; then
# the extracted values of the check, if it has any.
_SAVE_CHECK = """
WITH updated AS (
    UPDATE component
    SET consecutive_failures = %(failures)s, consecutive_successes = %(successes)s,
        last_checked_at = %(slot)s, last_response_time_ms = %(ms)s
    WHERE id = %(id)s AND status = %(status)s
      AND consecutive_failures = %(was_failures)s AND consecutive_successes = %(was_successes)s
      AND last_checked_at IS NOT DISTINCT FROM %(was_checked)s
      AND NOT EXISTS (SELECT 1 FROM uptime_check WHERE component_id = %(id)s AND scheduled_at = %(slot)s)
    RETURNING id
), checked AS (
    INSERT INTO uptime_check (component_id, scheduled_at, started_at, checked_at, status_code, response_time_ms,
                              success, outcome, error, condition_results)
    SELECT id, %(slot)s, %(started)s, %(now)s, %(code)s, %(ms)s, %(success)s, %(seen)s, %(error)s, %(results)s::jsonb
    FROM updated
    ON CONFLICT DO NOTHING
    RETURNING component_id
)"""
_SAVE_EXTRACTED = """, points AS (
    INSERT INTO extracted_value_data_point (extracted_value_id, value, scheduled_at, created_at)
    SELECT e.id, v.value::double precision, %(slot)s, %(now)s
    FROM checked
    JOIN extracted_value e ON e.component_id = checked.component_id
    JOIN jsonb_each_text(%(values)s::jsonb) AS v (name, value) ON v.name = e.name
    ON CONFLICT DO NOTHING
    RETURNING extracted_value_id, value
), latest AS (
    UPDATE extracted_value e SET last_value = points.value, last_at = %(slot)s
    FROM points WHERE e.id = points.extracted_value_id
)"""
SAVE_UNCHANGED = _SAVE_CHECK + " SELECT count(*) FROM checked"
SAVE_UNCHANGED_EXTRACTED = _SAVE_CHECK + _SAVE_EXTRACTED + " SELECT count(*) FROM checked"


def _save_unchanged(loaded: Loaded, after: status.State, scheduled_at: datetime, outcome: Outcome) -> bool:
    ms = round(outcome.response.response_time_ms)
    row = db.execute_sql(
        SAVE_UNCHANGED_EXTRACTED if outcome.extracted else SAVE_UNCHANGED,
        {
            "id": loaded.id,
            "status": loaded.state.status,
            "failures": after.failures,
            "successes": after.successes,
            "was_failures": loaded.state.failures,
            "was_successes": loaded.state.successes,
            "was_checked": loaded.last_checked_at,
            "slot": scheduled_at,
            "started": outcome.started_at,
            "now": utcnow(),
            "code": outcome.response.status,
            "ms": ms,
            "success": outcome.success,
            "seen": outcome.seen,
            "error": outcome.error,
            "results": json.dumps([r.as_dict() for r in outcome.results]),
            "values": json.dumps(outcome.extracted),
        },
    ).fetchone()
    return bool(row and row[0])


def record(component_id: int, scheduled_at: datetime, outcome: Outcome) -> list[int]:
    """Apply one check's outcome with the component locked. Returns the ids of the events written
    (to publish after commit).

    The component row is locked first, so two checks of one component finishing together apply
    one after the other; a result older than the latest applied one is kept but changes nothing.
    """
    now = utcnow()
    with db.atomic():
        # FOR NO KEY UPDATE: the check row's foreign key (FOR KEY SHARE) does not wait for it.
        component = (
            Component.select()
            .where(Component.id == component_id)
            .for_update("FOR NO KEY UPDATE")  # type: ignore[arg-type]
            .first()
        )
        if component is None:  # deleted since the check was sent
            return []
        inserted = (
            UptimeCheck.insert(
                component=component.id,
                scheduled_at=scheduled_at,
                started_at=outcome.started_at,
                checked_at=now,
                status_code=outcome.response.status,
                response_time_ms=round(outcome.response.response_time_ms),
                success=outcome.success,
                outcome=outcome.seen,
                error=outcome.error,
                condition_results=[r.as_dict() for r in outcome.results],
            )
            .on_conflict_ignore()
            .execute()
        )
        if inserted is None:  # this check was recorded already (a redelivered message)
            return []
        _store_extracted(component, scheduled_at, outcome.extracted, now)
        if component.last_checked_at is not None and scheduled_at <= component.last_checked_at:
            return []
        return _apply(component, scheduled_at, outcome, now)


def _store_extracted(component: Component, scheduled_at: datetime, values: dict[str, float], now: datetime) -> None:
    if not values:
        return
    for extracted in ExtractedValue.select().where(
        ExtractedValue.component == component.id, ExtractedValue.name.in_(list(values))
    ):
        value = values[extracted.name]
        ExtractedValueDataPoint.insert(
            extracted_value=extracted.id, value=value, scheduled_at=scheduled_at, created_at=now
        ).on_conflict_ignore().execute()
        ExtractedValue.update(last_value=value, last_at=scheduled_at).where(
            ExtractedValue.id == extracted.id,
            ExtractedValue.last_at.is_null() | (ExtractedValue.last_at < scheduled_at),
        ).execute()


def in_maintenance(component_id: int, now: datetime) -> bool:
    return (
        MaintenanceWindow.select()
        .where(
            MaintenanceWindow.component == component_id,
            MaintenanceWindow.starts_at <= now,
            MaintenanceWindow.ends_at > now,
        )
        .exists()
    )


def _apply(component: Component, scheduled_at: datetime, outcome: Outcome, now: datetime) -> list[int]:
    before = status.State(component.status, component.consecutive_failures, component.consecutive_successes)
    after = status.transition(
        before,
        outcome.seen,
        failure_threshold=component.failure_threshold,
        success_threshold=component.success_threshold,
        in_maintenance=in_maintenance(component.id, now),
    )
    changed = after.status != before.status
    updates = {
        Component.status: after.status,
        Component.consecutive_failures: after.failures,
        Component.consecutive_successes: after.successes,
        Component.last_checked_at: scheduled_at,
        Component.last_response_time_ms: round(outcome.response.response_time_ms),
    }
    if changed:
        updates[Component.status_since] = now
    Component.update(updates).where(Component.id == component.id).execute()
    if not changed or after.status == status.MAINTENANCE:
        return []

    about = {"id": component.id, "key": component.key, "name": component.name}
    event_ids = [
        events.emit(
            STATUS_CHANGED,
            component.organization_id,
            {
                "component": about,
                "from": before.status,
                "to": after.status,
                "since": now.isoformat(),
                "reason": reason(outcome),
            },
            component_id=component.id,
        )
    ]
    if component.auto_incident and after.status in status.OUTAGES and before.status not in status.OUTAGES:
        opened = incidents.open_automatic(component, after.status, reason(outcome), now)
        if opened:
            event_ids.append(
                events.emit(
                    INCIDENT_OPENED,
                    component.organization_id,
                    _incident(opened, about),
                    component_id=component.id,
                    incident_id=opened.id,
                )
            )
    if after.status == status.OPERATIONAL:
        resolved = incidents.resolve_automatic(component, f"{component.name} is operational again.", now)
        if resolved:
            event_ids.append(
                events.emit(
                    INCIDENT_RESOLVED,
                    component.organization_id,
                    _incident(resolved, about),
                    component_id=component.id,
                    incident_id=resolved.id,
                )
            )
    return event_ids


def _incident(incident: Incident, component: dict[str, Any]) -> dict[str, Any]:
    return {
        "component": component,
        "incident": {
            "id": incident.id,
            "title": incident.title,
            "impact": incident.impact,
            "started_at": incident.started_at.isoformat(),
            "resolved_at": incident.resolved_at and incident.resolved_at.isoformat(),
        },
    }


def reason(outcome: Outcome) -> str:
    """Why the check failed, in one line: the error, or the failed conditions as resolved."""
    if outcome.error:
        return outcome.error
    failed = [r.resolved for r in outcome.results if not r.success]
    return "; ".join(failed) if failed else "all conditions passed"


def find(name: str) -> Component:
    """A component by KEY, or ORGANIZATION/KEY; LookupError says what is wrong."""
    return find_by_key(Component, name, "component", " (see `pulse status`)")


# A check is up when it observed OPERATIONAL or DEGRADED_PERFORMANCE (slow is up, as status pages
# count it). Uptime over a window is the share of the checks scheduled in it that were up,
# truncated to 0.01 (so 100 means no check failed), and NULL when there was none.
#
# One pass over the last 30 days of checks, grouped by component. Rows arrive in time order, so a
# component's checks are spread one per heap page: reading them through the unique
# (component_id, scheduled_at) index costs a page per check (10 times slower, measured), where a
# scan reads each page once. A check is recorded after its slot, so a bound on checked_at (an
# hour looser, for clock skew between hosts) leaves out nothing of the window, and lets the BRIN
# index on checked_at skip the older part of the table.
UP = [status.OPERATIONAL, status.DEGRADED]
OVERVIEW = """
WITH uptime AS (
    SELECT component_id,
           count(*) FILTER (WHERE scheduled_at > %(now)s - interval '24 hours') AS checks_24h,
           count(*) FILTER (WHERE scheduled_at > %(now)s - interval '24 hours' AND up) AS up_24h,
           count(*) FILTER (WHERE scheduled_at > %(now)s - interval '7 days') AS checks_7d,
           count(*) FILTER (WHERE scheduled_at > %(now)s - interval '7 days' AND up) AS up_7d,
           count(*) AS checks_30d,
           count(*) FILTER (WHERE up) AS up_30d
    FROM (
        SELECT component_id, scheduled_at, outcome = ANY(%(up)s) AS up
        FROM uptime_check
        WHERE scheduled_at > %(now)s - interval '30 days' AND checked_at > %(now)s - interval '30 days 1 hour'
    ) checks
    GROUP BY component_id
)
SELECT o.slug, c.key, c.name, c.type, c.status, c.status_since, c.paused, c.last_checked_at,
       c.last_response_time_ms, i.id, i.title, i.started_at,
       (floor(10000.0 * u.up_24h / nullif(u.checks_24h, 0)) / 100)::float8,
       (floor(10000.0 * u.up_7d / nullif(u.checks_7d, 0)) / 100)::float8,
       (floor(10000.0 * u.up_30d / nullif(u.checks_30d, 0)) / 100)::float8
FROM component c
JOIN organization o ON o.id = c.organization_id
LEFT JOIN incident i ON i.component_id = c.id AND i.resolved_at IS NULL
LEFT JOIN uptime u ON u.component_id = c.id
WHERE %(organization)s::text IS NULL OR o.slug = %(organization)s
ORDER BY o.slug, c.key
"""


def overview(organization: str | None = None) -> list[dict[str, Any]]:
    """Every component (of one organization, given its slug) with its status, last check, open
    incident and uptime percentages over 24 hours, 7 days and 30 days, for `pulse status`."""
    rows = []
    for (
        slug,
        key,
        name,
        kind,
        current,
        since,
        paused,
        checked,
        response_ms,
        incident_id,
        title,
        started,
        uptime_24h,
        uptime_7d,
        uptime_30d,
    ) in db.execute_sql(OVERVIEW, {"now": utcnow(), "organization": organization, "up": UP}).fetchall():
        rows.append(
            {
                "organization": slug,
                "key": key,
                "name": name,
                "type": kind,
                "status": current,
                "status_since": since.isoformat(),
                "paused": paused,
                "last_checked_at": checked and checked.isoformat(),
                "last_response_time_ms": response_ms,
                "incident": incident_id and {"id": incident_id, "title": title, "started_at": started.isoformat()},
                "uptime_24h": uptime_24h,
                "uptime_7d": uptime_7d,
                "uptime_30d": uptime_30d,
            }
        )
    return rows
