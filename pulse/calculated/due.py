"""When calculated metrics are evaluated: marked due when an input changes, coalesced, claimed in
dependency order by the claim-and-send loop (`schedules/calculated.py`).

A new value of a source (a metrics query's poll, an uptime check's extracted value) marks every
calculated metric it feeds, directly or through other calculated metrics, in the statement that
stores it: triggers on ``metrics_query`` and ``extracted_value`` (migration
pulse/migrations/0014_calculated_marks.py) mark them when a latest value's time moves, so the
sources' SQL names no calculated metric, and a crash cannot store a value and lose its mark.
``pending_since`` is when the first unevaluated change came, ``due_at`` when to evaluate. Each
change moves ``due_at`` to 1 s (``QUIET``) after it, but never past 20 s (``MOST_WAIT``) after
``pending_since``: a burst of changes is one evaluation with the latest inputs once the burst is
quiet for 1 s, and a stream that never quiets is evaluated every 20 s. These are the migration's
SQL function ``calculated_mark``, which `mark` calls too: changing them takes a new migration.

The loop claims a due metric only when none of its calculated inputs is marked or being evaluated
(claimed in the last `SENT_FOR`), so a metric fed through another is evaluated after it, with its
new value. A claim clears the mark and sends the evaluation (``recalculate_all``, a batch of
``[id, due_at]``), the due time being the evaluation's key (later than the last one's); a change
during the evaluation marks it again. An evaluation also sets ``due_at``, unmarked, to when its
oldest input grows older than ``max_age`` (`pulse.calculated.record`), so a metric whose inputs
stop changing is evaluated once more, and shows as stale; and when what it gives changed without a
mark (it grew stale), it marks the metrics it feeds directly, due at once (`mark_dependents`).

Rows are locked in id order, one mark per statement (two sources' statements at once never
deadlock), and a mark that would move ``due_at`` by less than 100 ms (``SLACK``) writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pulse.db import db

SENT_FOR = "interval '60 seconds'"  # a claimed evaluation holds its dependents back this long at most

# Metrics changed by `pulse apply`, and what they feed.
_MARK = """SELECT calculated_mark(array(
    SELECT v.calculated_metric_id FROM calculated_metric_variable v
    WHERE v.calculated_input_id = ANY(%(ids)s) OR v.calculated_metric_id = ANY(%(ids)s)
))"""
# An input being evaluated, or about to be: its dependents wait for its new value.
_WAITING = f"""EXISTS (
    SELECT 1 FROM calculated_metric_variable v JOIN calculated_metric i ON i.id = v.calculated_input_id
    WHERE v.calculated_metric_id = c.id AND (i.pending_since IS NOT NULL OR i.sent_at > now() - {SENT_FOR})
)"""
_CLAIM = f"""
WITH due AS (
    SELECT c.id, greatest(c.due_at, c.last_evaluated_at + interval '1 millisecond') AS due_at FROM calculated_metric c
    WHERE c.due_at <= %(horizon)s AND NOT {_WAITING}
    ORDER BY c.due_at
    LIMIT %(limit)s
    FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE calculated_metric c SET pending_since = NULL, due_at = NULL, sent_at = now()
FROM due WHERE c.id = due.id
RETURNING c.id, due.due_at
"""
_NEXT_DUE = f"SELECT min(c.due_at) FROM calculated_metric c WHERE c.due_at IS NOT NULL AND NOT {_WAITING}"
# The direct dependents of metrics whose value or state changed without a source's mark (its
# inputs grew stale, say), due now: they are evaluated after them, and mark theirs in turn.
_DEPENDENTS = """
UPDATE calculated_metric c SET pending_since = now(), due_at = now()
FROM (
    SELECT c.id FROM calculated_metric c JOIN calculated_metric_variable v ON v.calculated_metric_id = c.id
    WHERE v.calculated_input_id = ANY(%(ids)s) AND c.pending_since IS NULL
    ORDER BY c.id
    FOR NO KEY UPDATE OF c
) AS locked
WHERE c.id = locked.id
"""


def mark(calculated_metric_ids: Sequence[int]) -> int:
    """Mark these calculated metrics and what they feed (after `pulse apply` changed them).
    Returns how many were marked."""
    if not calculated_metric_ids:
        return 0
    return db.execute_sql(_MARK, {"ids": list(calculated_metric_ids)}).fetchone()[0]


def mark_dependents(calculated_metric_ids: Sequence[int]) -> None:
    """Mark the direct dependents of these metrics, due now (see `_DEPENDENTS`), in one statement."""
    if calculated_metric_ids:
        db.execute_sql(_DEPENDENTS, {"ids": list(calculated_metric_ids)})


def claim(horizon: datetime, limit: int = 100) -> list[tuple[int, datetime]]:
    """Claim the metrics due by ``horizon`` whose inputs are not waiting for an evaluation: (id,
    due time), the due time being the evaluation's key, always later than the metric's last one,
    so a redelivered message is told from a new evaluation.

    A hundred at most, and only what is due (the loop's schedule does not claim ahead): the loop
    sends them at once and commits, so a source's mark waits for a claim's row locks as briefly
    as can be."""
    return list(db.execute_sql(_CLAIM, {"horizon": horizon, "limit": limit}).fetchall())


def next_due() -> datetime | None:
    """The earliest due time of a metric that could be claimed, or None."""
    row = db.execute_sql(_NEXT_DUE).fetchone()
    return row[0] if row and row[0] else None
