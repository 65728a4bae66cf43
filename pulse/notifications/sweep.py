"""Notifications no message will deliver any more: a row left ``pending`` or ``sending`` when the
last message for it died (its worker replaced past the hard time limit, a database outage on its
last attempt). Every minute the outbox tick sends them again, so none waits for a person to run
``pulse dlq requeue``; one that keeps failing is given up after `GIVE_UP_AFTER` attempts.
"""

from __future__ import annotations

from datetime import timedelta

from pulse.db import db

# Longer than any wait a live message can be in: a provider's Retry-After or a retry's backoff
# (at most 20 minutes each), so a row this quiet has no message left.
QUIET = timedelta(minutes=30)
GIVE_UP_AFTER = 10  # attempts, across every message sent for the row

REDRIVE = """
WITH stale AS (
    SELECT id FROM notification
    WHERE status IN ('pending', 'sending') AND coalesce(claimed_at, created_at) < now() - %(quiet)s
    ORDER BY id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE notification n
SET status = CASE WHEN n.attempts >= %(give_up)s THEN 'failed' ELSE 'pending' END,
    claimed_by = NULL,
    claimed_at = now(),
    last_error = CASE WHEN n.attempts >= %(give_up)s
                      THEN coalesce(n.last_error || '; ', '') || 'given up after ' || n.attempts || ' attempts'
                      ELSE n.last_error END
FROM stale
WHERE n.id = stale.id
RETURNING n.id, n.status
"""


def stale(limit: int = 500) -> list[int]:
    """Take the notifications no message will deliver any more (see the module's docstring) and
    return those to send again; those past `GIVE_UP_AFTER` attempts are failed instead."""
    with db.atomic():
        rows = db.execute_sql(REDRIVE, {"quiet": QUIET, "limit": limit, "give_up": GIVE_UP_AFTER}).fetchall()
    return [notification_id for notification_id, status in rows if status == "pending"]
