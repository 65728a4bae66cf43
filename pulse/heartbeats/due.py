"""Which heartbeat monitors are due: those with pings waiting to be applied, and those whose
deadline passed, claimed by the claim-and-send loop (`schedules/uptime.py`).

A claim locks the monitors due (``FOR UPDATE SKIP LOCKED``), reckons for each, in Python, the
latest deadline it missed by now and its next deadline after now (`pulse.heartbeats.deadlines`: a
cron expression's runs cannot be reckoned in SQL), and writes the next ones, in the caller's
transaction. So a monitor silent for a long time (or while no worker ran) is one missed deadline per
run expected, never a burst: a claim sends the latest deadline missed, and the next one is that of
the next run. It claims only what is due (a deadline is missed once it has passed, not before).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pulse.db import db
from pulse.heartbeats import deadlines

DUE = """
SELECT component_id, pending_at, deadline_at, period_seconds, cron, time_zone, grace_seconds, last_ping_at,
       last_start_at
FROM heartbeat_monitor
WHERE pending_at <= %(now)s OR deadline_at <= %(now)s
ORDER BY least(pending_at, deadline_at)
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED
"""
MOVE = """
UPDATE heartbeat_monitor h SET pending_at = NULL, deadline_at = moved.deadline_at
FROM unnest(%s::bigint[], %s::timestamptz[]) AS moved (component_id, deadline_at)
WHERE h.component_id = moved.component_id
"""


def claim(horizon: datetime, limit: int = 1000) -> list[tuple[tuple[int, datetime | None], datetime]]:
    """Claim the monitors due by ``horizon``: ((component id, deadline missed or None), due time)
    of each with pings waiting or a deadline missed. A monitor whose deadline passed but whose state
    has no missed deadline by then (a start since followed by its success) only moves on."""
    claimed = []
    ids, following = [], []
    for component_id, pending_at, deadline_at, *expected, grace_s, last_ping, last_start in db.execute_sql(
        DUE, {"now": horizon, "limit": limit}
    ).fetchall():
        runs, grace = deadlines.runs(*expected), timedelta(seconds=grace_s)
        missed = deadlines.missed(runs, grace, last_ping, last_start, horizon, since=deadline_at)
        ids.append(component_id)
        following.append(deadlines.following(runs, grace, last_ping, last_start, horizon))
        if pending_at is not None or missed is not None:
            claimed.append(((component_id, missed), min(at for at in (pending_at, missed) if at is not None)))
    if ids:
        db.execute_sql(MOVE, (ids, following))
    return claimed


def next_due() -> datetime | None:
    """The earliest time a monitor comes due, or None."""
    row = db.execute_sql("SELECT least(min(pending_at), min(deadline_at)) FROM heartbeat_monitor").fetchone()
    return row[0] if row else None
