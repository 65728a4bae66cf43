"""A ping, as the inbound service (`pulse serve`) hands it over: recorded in one statement, with
PostgreSQL alone (never RabbitMQ), so no ping is lost while RabbitMQ is away. The monitor's next
deadline is left to the claim-and-send loop (`pulse.heartbeats.due`), and what the ping means for
the component's status to the worker it sends (`pulse.heartbeats.apply`), as soon as the ping is
committed."""

from __future__ import annotations

from datetime import datetime

from pulse.db import db
from pulse.inbound.tokens import digest

BODY_LIMIT = 10 * 1024  # bytes of a ping's body kept; the rest is ignored, never refused
KINDS = ("success", "start", "fail")

# The ping row, and the monitor's state, in one statement; no row at all for an unknown token. A
# success or a failure is the monitor's last ping, clears the run started before it, and waits to be
# applied; its next deadline is the claim's to reckon (`pulse.heartbeats.due`), in Python, as a cron
# expression's cannot be in SQL. A start (unless older than the last ping: a request overtaken by a
# later one) is the run in progress, due to finish within the grace: the deadline moves to that if
# earlier. Its row is applied already (it changes no status).
RECORD = """
WITH monitor AS (
    UPDATE heartbeat_monitor h
    SET last_start_at = CASE WHEN NOT %(start)s THEN CASE WHEN h.last_start_at > %(now)s THEN h.last_start_at END
                             WHEN h.last_ping_at >= %(now)s THEN h.last_start_at
                             ELSE greatest(h.last_start_at, %(now)s) END,
        last_ping_at = CASE WHEN %(start)s THEN h.last_ping_at ELSE greatest(h.last_ping_at, %(now)s) END,
        deadline_at = CASE WHEN NOT %(start)s OR h.last_ping_at >= %(now)s THEN h.deadline_at
                           ELSE least(h.deadline_at, %(now)s + make_interval(secs => h.grace_seconds)) END,
        pending_at = CASE WHEN %(start)s THEN h.pending_at ELSE coalesce(h.pending_at, %(now)s) END
    WHERE h.token_sha256 = %(token)s
    RETURNING h.component_id
), ping AS (
    INSERT INTO heartbeat_ping (component_id, received_at, kind, exit_status, body, applied)
    SELECT component_id, %(now)s, %(kind)s, %(exit_status)s, %(body)s, %(start)s FROM monitor
)
SELECT count(*) FROM monitor
"""


KNOWN = "SELECT 1 FROM heartbeat_monitor WHERE token_sha256 = %s"


def known(token: str) -> bool:
    """Whether a heartbeat monitor has this token."""
    return db.execute_sql(KNOWN, (digest(token),)).fetchone() is not None


def parse(kind: str) -> tuple[str, int | None]:
    """(kind, exit status) of a ping's kind as its URL says it: ``success``, ``start``, ``fail``,
    or an exit status from 0 (success) to 255 (any other is a failure). Raises ValueError for
    anything else."""
    if kind in KINDS:
        return kind, None
    if not (kind.isascii() and kind.isdigit() and len(kind) <= 3 and int(kind) <= 255):
        raise ValueError("a ping is success, start, fail or an exit status from 0 to 255")
    return ("success" if int(kind) == 0 else "fail"), int(kind)


def record(token: str, kind: str, body: bytes, now: datetime) -> bool:
    """Record a ping of the heartbeat monitor whose token is ``token``, received at ``now``, with
    the first `BODY_LIMIT` bytes of ``body``; commits. Returns False, writing nothing, when no
    monitor has this token. Raises ValueError for a ``kind`` `parse` refuses."""
    kind, exit_status = parse(kind)
    params = {"token": digest(token), "kind": kind, "exit_status": exit_status, "body": bytes(body[:BODY_LIMIT]),
              "start": kind == "start", "now": now}  # fmt: skip
    with db.atomic():
        return bool(db.execute_sql(RECORD, params).fetchone()[0])
