"""Which heartbeat monitors are due: those with pings waiting to be applied, and those whose
deadline passed, claimed by the claim-and-send loop (`schedules/uptime.py`).

A claim moves a passed deadline on by whole periods past now, so a monitor silent for a long time
(or while no worker ran) is one missed deadline per period, never a burst: it sends the latest
deadline missed. It claims only what is due (a deadline is missed once it has passed, not before).
"""

from __future__ import annotations

from datetime import datetime

from pulse.db import db

# Claimed: ((component id, the latest deadline missed or None), when it came due).
CLAIM = """
WITH due AS (
    SELECT component_id, deadline_at, pending_at FROM heartbeat_monitor
    WHERE pending_at <= %(now)s OR deadline_at <= %(now)s
    ORDER BY least(pending_at, deadline_at)
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), claimed AS (
    SELECT due.component_id, due.pending_at,
           due.deadline_at + make_interval(secs => h.period_seconds * floor(
               extract(epoch FROM %(now)s - due.deadline_at) / h.period_seconds)) AS missed
    FROM due JOIN heartbeat_monitor h ON h.component_id = due.component_id
    WHERE due.deadline_at <= %(now)s
    UNION ALL
    SELECT component_id, pending_at, NULL FROM due WHERE deadline_at IS NULL OR deadline_at > %(now)s
)
UPDATE heartbeat_monitor h
SET pending_at = NULL,
    deadline_at = coalesce(claimed.missed + make_interval(secs => h.period_seconds), h.deadline_at)
FROM claimed
WHERE h.component_id = claimed.component_id
RETURNING h.component_id, claimed.missed, least(claimed.pending_at, claimed.missed)
"""


def claim(horizon: datetime, limit: int = 1000) -> list[tuple[tuple[int, datetime | None], datetime]]:
    """Claim the monitors due by ``horizon``: ((component id, deadline missed or None), due time)."""
    rows = db.execute_sql(CLAIM, {"now": horizon, "limit": limit}).fetchall()
    return [((component_id, missed), due) for component_id, missed, due in rows]


def next_due() -> datetime | None:
    """The earliest time a monitor comes due, or None."""
    row = db.execute_sql("SELECT least(min(pending_at), min(deadline_at)) FROM heartbeat_monitor").fetchone()
    return row[0] if row else None
