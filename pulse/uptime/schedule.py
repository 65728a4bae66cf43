"""Claiming due checks: one statement that takes the due components and moves each to its next slot.

Slots stay on each component's grid (the next slot is counted from the previous due time, not
from now), so schedules never drift; slots missed while nothing ran are skipped, not replayed in
a burst. ``FOR UPDATE SKIP LOCKED`` lets two schedulers claim at once without doubling a check.
"""

from __future__ import annotations

from datetime import datetime

from pulse.db import db

CLAIM = """
WITH due AS (
    SELECT id FROM component
    WHERE type = 'ENDPOINT' AND NOT paused AND next_check_at <= %(now)s
    ORDER BY next_check_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE component AS c
SET next_check_at = c.next_check_at + make_interval(
    secs => c.interval_seconds * (floor(extract(epoch FROM %(now)s - c.next_check_at) / c.interval_seconds) + 1)
)
FROM due
WHERE c.id = due.id
RETURNING c.id, c.next_check_at - make_interval(secs => c.interval_seconds) AS scheduled_at
"""

# Components without a slot (new, rescheduled or resumed) start within their first interval or
# first minute, whichever is shorter, at a random point, so a thousand new components do not all
# fire in the same second.
START = """
UPDATE component
SET next_check_at = %(now)s + make_interval(secs => random() * least(interval_seconds, 60))
WHERE type = 'ENDPOINT' AND NOT paused AND next_check_at IS NULL
"""

NEXT_DUE = "SELECT min(next_check_at) FROM component WHERE type = 'ENDPOINT' AND NOT paused"


def claim(horizon: datetime, limit: int = 1000) -> list[tuple[int, datetime]]:
    """Claim the components due by ``horizon``: (component id, scheduled time of the slot
    claimed, the latest slot not after the horizon)."""
    return list(db.execute_sql(CLAIM, {"now": horizon, "limit": limit}).fetchall())


def start_new(now: datetime) -> int:
    """Give a first slot to components that have none. Returns how many."""
    return db.execute_sql(START, {"now": now}).rowcount


def next_due() -> datetime | None:
    row = db.execute_sql(NEXT_DUE).fetchone()
    return row[0] if row else None
