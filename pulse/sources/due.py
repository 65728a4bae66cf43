"""Which alert sources have events waiting, claimed by the claim-and-send loop
(`schedules/oncall.py`): a claim clears the source's ``pending_at``, and an event recorded after it
sets it again, so every event is handed to a worker. An event still waiting `OVERDUE` after it
arrived (its message lost with a broker's disk) is handed over again by the minute's tick
(`redrive`): applying is idempotent, each event applied once."""

from __future__ import annotations

from datetime import datetime, timedelta

from pulse.db import db

OVERDUE = timedelta(minutes=1)

CLAIM = """
UPDATE alert_source s SET pending_at = NULL
FROM (SELECT id, pending_at FROM alert_source
      WHERE pending_at <= %(now)s
      ORDER BY pending_at
      LIMIT %(limit)s
      FOR NO KEY UPDATE SKIP LOCKED) due
WHERE s.id = due.id
RETURNING s.id, due.pending_at
"""
REDRIVE = """
UPDATE alert_source s SET pending_at = %(now)s
WHERE s.pending_at IS NULL AND EXISTS (
    SELECT 1 FROM alert_event e WHERE e.source_id = s.id AND NOT e.applied AND e.received_at < %(before)s)
RETURNING s.id
"""


def claim(horizon: datetime, limit: int = 1000) -> list[tuple[int, datetime]]:
    """Claim the sources with events waiting since ``horizon`` or before: (source id, since when)."""
    return [(row[0], row[1]) for row in db.execute_sql(CLAIM, {"now": horizon, "limit": limit}).fetchall()]


def next_due() -> datetime | None:
    """Since when the longest-waiting source has events waiting, or None."""
    row = db.execute_sql("SELECT min(pending_at) FROM alert_source").fetchone()
    return row[0] if row else None


def redrive(now: datetime) -> list[int]:
    """Mark again the sources with an event waiting `OVERDUE` but not marked; returns their ids."""
    with db.atomic():
        return [row[0] for row in db.execute_sql(REDRIVE, {"now": now, "before": now - OVERDUE}).fetchall()]
