"""Rows that come due on a grid of their own: a component's checks, a query's polls, an alert's
escalations. Each row keeps its next due time; a claim takes the due rows and moves each to its
next slot in one statement.

Slots stay on each row's grid (the next slot is counted from the previous due time, not from
now), so schedules never drift; slots missed while nothing ran are skipped, not replayed in a
burst. ``FOR UPDATE SKIP LOCKED`` lets two schedulers claim at once without doubling a slot. The
claim-and-send loop (`pulse.recurring.loop`) runs the claims.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from pulse.db import db
from pulse.errors import PermanentError


def parse_slot(scheduled_at: str) -> datetime:
    """A slot as a message carries it (ISO 8601); a message with anything else is refused for good."""
    try:
        return datetime.fromisoformat(scheduled_at)
    except (TypeError, ValueError):
        raise PermanentError(f"scheduled_at {scheduled_at!r} is not an ISO 8601 time") from None


def parse_batch(batch: list[list], key: str) -> list[tuple[int, datetime]]:
    """The ``[id, scheduled_at]`` pairs of a batch message (a loop's `batch`), ``key`` naming the
    ids in the refusal of a message with anything else."""
    pairs = isinstance(batch, list) and all(isinstance(item, list) and len(item) == 2 for item in batch)
    if not pairs or not all(isinstance(item_id, int) for item_id, _ in batch):
        raise PermanentError(f"batch is not a list of [{key}, scheduled_at] pairs")
    return [(item_id, parse_slot(slot)) for item_id, slot in batch]


@dataclasses.dataclass(frozen=True)
class Grid:
    """Parameters:
    table: the table of the rows (with ``id`` and ``interval_seconds`` columns).
    column: the column of each row's next due time; NULL for a row without a slot yet.
    where: the SQL condition of the rows that take part (not paused, of the right type).
    since: a column that keeps each row's first slot (its grid is that time plus whole
      intervals), or None.
    """

    table: str
    column: str
    where: str
    since: str | None = None

    def claim(self, horizon: datetime, limit: int = 1000) -> list[tuple[int, datetime]]:
        """Claim the rows due by ``horizon``: (id, scheduled time of the slot claimed, the latest
        slot not after the horizon)."""
        sql = f"""
            WITH due AS (
                SELECT id FROM {self.table}
                WHERE {self.where} AND {self.column} <= %(now)s
                ORDER BY {self.column}
                LIMIT %(limit)s
                FOR UPDATE SKIP LOCKED
            )
            UPDATE {self.table} AS r
            SET {self.column} = r.{self.column} + make_interval(secs => r.interval_seconds * (
                floor(extract(epoch FROM %(now)s - r.{self.column}) / r.interval_seconds) + 1
            ))
            FROM due
            WHERE r.id = due.id
            RETURNING r.id, r.{self.column} - make_interval(secs => r.interval_seconds) AS scheduled_at
        """
        return list(db.execute_sql(sql, {"now": horizon, "limit": limit}).fetchall())

    def start_new(self, now: datetime) -> int:
        """Give a first slot to the rows that have none (new, rescheduled or resumed): within their
        first interval or first minute, whichever is shorter, at a random point, so a thousand new
        rows do not all come due in the same second. Returns how many."""
        first = f"{self.column} = f.first" + (f", {self.since} = f.first" if self.since else "")
        sql = f"""
            UPDATE {self.table} AS r SET {first}
            FROM (
                SELECT id, %(now)s + make_interval(secs => random() * least(interval_seconds, 60)) AS first
                FROM {self.table} WHERE {self.where} AND {self.column} IS NULL
            ) AS f
            WHERE r.id = f.id AND r.{self.column} IS NULL
        """
        return db.execute_sql(sql, {"now": now}).rowcount

    def next_due(self) -> datetime | None:
        """The earliest due time of any row taking part, or None."""
        row = db.execute_sql(f"SELECT min({self.column}) FROM {self.table} WHERE {self.where}").fetchone()
        return row[0] if row else None
