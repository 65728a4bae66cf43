"""A ping, as the inbound service (`pulse serve`) hands it over: recorded in one statement, with
PostgreSQL alone (never RabbitMQ), so no ping is lost while RabbitMQ is away. What it means for the
component's status is left to a worker (`pulse.heartbeats.apply`), which the claim-and-send loop
sends as soon as the ping is committed."""

from __future__ import annotations

from datetime import datetime

from pulse.db import db
from pulse.heartbeats.spec import digest

BODY_LIMIT = 10 * 1024  # bytes of a ping's body kept; the rest is ignored, never refused
KINDS = ("success", "start", "fail")

# The monitor's last ping (a success or a failure moves the deadline to it plus the period and the
# grace, and waits to be applied) or last start (recorded only), and the ping row, in one statement;
# no row at all for an unknown token.
RECORD = """
WITH monitor AS (
    UPDATE heartbeat_monitor h
    SET last_start_at = CASE WHEN %(start)s THEN %(now)s ELSE h.last_start_at END,
        last_ping_at = CASE WHEN %(start)s THEN h.last_ping_at ELSE greatest(h.last_ping_at, %(now)s) END,
        deadline_at = CASE WHEN %(start)s THEN h.deadline_at
                           ELSE greatest(h.last_ping_at, %(now)s)
                                + make_interval(secs => h.period_seconds + h.grace_seconds) END,
        pending_at = CASE WHEN %(start)s THEN h.pending_at ELSE coalesce(h.pending_at, %(now)s) END
    WHERE h.token_sha256 = %(token)s
    RETURNING h.component_id
), ping AS (
    INSERT INTO heartbeat_ping (component_id, received_at, kind, exit_status, body, applied)
    SELECT component_id, %(now)s, %(kind)s, %(exit_status)s, %(body)s, %(start)s FROM monitor
)
SELECT count(*) FROM monitor
"""


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
