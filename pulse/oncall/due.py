"""When escalations are sent: an alert's ``next_escalation_at`` is when its level's wait ends. The
claim-and-send loop (`schedules/oncall.py`) claims the alerts due (marking ``escalation_sent_at``,
skipping rows another claim holds) and sends ``escalate(alert, level, round)`` at that time; the
escalation moves the alert only from that level and round, so two schedulers, or a message sent
twice, page once. An escalation still not done `OVERDUE` after its time (its message lost with a
broker's disk, or failing) is unmarked by the minute's tick (`redrive`) and claimed again.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pulse.db import db
from pulse.models import utcnow

OVERDUE = timedelta(minutes=1)

_CLAIM = """
    UPDATE oncall_alert a SET escalation_sent_at = now()
      FROM (SELECT id FROM oncall_alert
             WHERE status = 'triggered' AND escalation_sent_at IS NULL AND next_escalation_at <= %(horizon)s
             ORDER BY next_escalation_at
             LIMIT %(limit)s
               FOR NO KEY UPDATE SKIP LOCKED) due
     WHERE a.id = due.id
 RETURNING a.id, a.level, a.round, a.next_escalation_at
"""
_NEXT_DUE = """
    SELECT min(next_escalation_at) FROM oncall_alert WHERE status = 'triggered' AND escalation_sent_at IS NULL
"""
OVERDUE_COUNT = f"""
    SELECT count(*) FROM oncall_alert
     WHERE status = 'triggered' AND next_escalation_at < now() - interval '{OVERDUE.total_seconds():g} seconds'
"""
_REDRIVE = """
    UPDATE oncall_alert a SET escalation_sent_at = NULL
      FROM (SELECT id FROM oncall_alert
             WHERE status = 'triggered' AND escalation_sent_at IS NOT NULL AND next_escalation_at < %(before)s
             ORDER BY id
               FOR NO KEY UPDATE SKIP LOCKED) overdue
     WHERE a.id = overdue.id
 RETURNING a.id
"""


def claim(horizon: datetime, limit: int = 500) -> list[tuple[tuple[int, int, int], datetime]]:
    """Claim the alerts whose escalation is due by ``horizon``: ((id, level, round), due time)."""
    rows = db.execute_sql(_CLAIM, {"horizon": horizon, "limit": limit}).fetchall()
    return [((alert_id, level, round_), due_at) for alert_id, level, round_, due_at in rows]


def next_due() -> datetime | None:
    """The earliest escalation not claimed yet, or None."""
    row = db.execute_sql(_NEXT_DUE).fetchone()
    return row[0] if row else None


def redrive(now: datetime | None = None) -> list[int]:
    """Unmark the escalations sent but not done `OVERDUE` after their time, so the loop claims
    them again (the escalation is guarded: a late first message pages nothing twice). Returns
    their alerts' ids."""
    before = (now or utcnow()) - OVERDUE
    with db.atomic():
        return [row[0] for row in db.execute_sql(_REDRIVE, {"before": before}).fetchall()]
