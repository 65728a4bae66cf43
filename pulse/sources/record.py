"""An event of an alert source, as `pulse serve` hands it over: recorded in one statement, with
PostgreSQL alone (never RabbitMQ), so no event is lost while RabbitMQ is away. What it does to the
source's alerts is left to a worker (`pulse.sources.apply`), which the claim-and-send loop sends as
soon as the event is committed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from pulse.db import db
from pulse.inbound.tokens import digest
from pulse.sources.formats import Received

# The source marked as having events waiting, and the event row, in one statement; no row at all
# for a token no source of this kind has.
RECORD = """
WITH source AS (
    UPDATE alert_source SET pending_at = coalesce(pending_at, %(now)s)
    WHERE token_sha256 = %(token)s AND kind = %(kind)s
    RETURNING id
)
INSERT INTO alert_event (source_id, received_at, action, dedup_key, summary, severity, labels, details)
SELECT id, %(now)s, %(action)s, %(dedup_key)s, %(summary)s, %(severity)s, %(labels)s, %(details)s FROM source
RETURNING id
"""
KNOWN = "SELECT signature FROM alert_source WHERE token_sha256 = %s AND kind = %s"


def record(token: str, kind: str, received: Received, now: datetime) -> bool:
    """Record the event ``received`` from the source of ``kind`` whose token is ``token``; commits.
    Returns False, writing nothing, when no such source has this token."""
    params = {
        "token": digest(token), "kind": kind, "now": now, "action": received.action,
        "dedup_key": received.dedup_key, "summary": received.summary, "severity": received.severity,
        "labels": Jsonb(received.labels), "details": Jsonb(received.details),
    }  # fmt: skip
    with db.atomic():
        return db.execute_sql(RECORD, params).fetchone() is not None


def known(token: str, kind: str) -> bool:
    """Whether a source of ``kind`` has this token (for what is answered without being recorded)."""
    return find(token, kind) is not None


def find(token: str, kind: str) -> Found | None:
    """The source of ``kind`` whose token is ``token``, as a request to it is checked, or None."""
    row = db.execute_sql(KNOWN, (digest(token), kind)).fetchone()
    return None if row is None else Found(signature=row[0])


@dataclass(frozen=True)
class Found:
    """A source a request's token names: how its requests are signed (`pulse.sources.signature`;
    None: they are not)."""

    signature: dict[str, Any] | None
