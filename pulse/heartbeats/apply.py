"""What a heartbeat monitor's pings and missed deadlines do to its component's status, applied by
a worker through the one state machine (`pulse.components.changes`): a success ping is an
OPERATIONAL observation, a failure ping or a missed deadline a MAJOR_OUTAGE one, judged by the
component's failure and success thresholds; incidents and events follow as for checks.

Each observation applies once: a ping is marked applied in the same transaction, and an
observation is applied only if it is later than the last one applied (``last_checked_at``), so a
redelivered message changes nothing. A deadline counts as missed only if the monitor is overdue by
it as its pings stand now (`pulse.heartbeats.deadlines.first`): a ping may commit just after the
claim that found its deadline passed. A deadline missed by a run started (``/start``) and not
finished within the grace says so.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pulse.components import changes
from pulse.components.status import MAJOR_OUTAGE, OPERATIONAL
from pulse.db import db
from pulse.heartbeats import deadlines
from pulse.models import utcnow
from pulse.spec import show_duration

KEEP = 100  # pings kept per monitor, the latest

LOAD = """
SELECT c.failure_threshold, c.success_threshold, c.paused, c.last_checked_at, h.period_seconds, h.cron,
       h.time_zone, h.grace_seconds, h.last_ping_at, h.last_start_at
FROM heartbeat_monitor h JOIN component c ON c.id = h.component_id
WHERE h.component_id = %s
FOR NO KEY UPDATE OF c
"""
PINGS = """
UPDATE heartbeat_ping SET applied = true WHERE component_id = %s AND NOT applied
RETURNING received_at, kind, exit_status
"""
TRIM = """
DELETE FROM heartbeat_ping WHERE component_id = %(id)s AND applied AND id < (
    SELECT id FROM heartbeat_ping WHERE component_id = %(id)s ORDER BY id DESC OFFSET %(keep)s LIMIT 1)
"""

#: One observation: (when, the status seen, why).
Observation = tuple[datetime, str, str]


def apply(component_id: int, missed: datetime | None) -> list[int]:
    """Apply the monitor's waiting pings and its missed deadline ``missed`` (if any), in time order,
    in one transaction. Returns the ids of the events written, to publish after commit."""
    with db.atomic():
        row = db.execute_sql(LOAD, (component_id,)).fetchone()
        if row is None:  # deleted, or no longer a heartbeat
            return []
        failure_threshold, success_threshold, paused, last_applied, *expected, grace_s, last_ping, last_start = row
        observed = [_ping(*ping) for ping in db.execute_sql(PINGS, (component_id,)).fetchall()]
        if missed is not None and not paused:
            runs, grace = deadlines.runs(*expected), timedelta(seconds=grace_s)
            overdue = deadlines.first(runs, grace, last_ping, last_start)
            if overdue is not None and overdue <= missed:
                observed.append((missed, MAJOR_OUTAGE, _missed(missed, last_start, grace)))
        db.execute_sql(TRIM, {"id": component_id, "keep": KEEP})
        event_ids: list[int] = []
        for at, seen, reason in sorted(observed):
            if last_applied is not None and at <= last_applied:
                continue
            component = changes.lock(
                component_id, failure_threshold=failure_threshold, success_threshold=success_threshold
            )
            if component is None:
                return []
            event_ids += changes.apply(component, seen, reason, utcnow(), last_checked_at=at)
            last_applied = at
        return event_ids


def _missed(deadline: datetime, last_start: datetime | None, grace: timedelta) -> str:
    if last_start is not None and last_start + grace <= deadline:
        return f"started at {last_start.isoformat()}, no success or failure within the grace ({show_duration(grace)})"
    return f"no ping by the deadline {deadline.isoformat()}"


def _ping(received_at: datetime, kind: str, exit_status: int | None) -> Observation:
    if kind == "success":
        return received_at, OPERATIONAL, "ping received"
    shown = "" if exit_status is None else f" (exit status {exit_status})"
    return received_at, MAJOR_OUTAGE, f"the job reported a failure{shown}"
