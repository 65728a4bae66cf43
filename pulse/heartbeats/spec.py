"""A heartbeat monitor in the configuration file: a component of type ``heartbeat``, with the
period its job pings at, the grace after it, and its ping token (`pulse.uptime.spec` reads these).

    components:
      - key: nightly-backup
        name: Nightly backup
        type: heartbeat
        period: 1d
        grace: 1h
        token: ${BACKUP_PING_TOKEN}

The token comes from the file, from an environment variable: applying the file again, or on a new
database, keeps the URL the job pings. Pulse keeps only its SHA-256.
"""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator

from pulse.db import db
from pulse.spec import parse_duration, within

SHORTEST, LONGEST = timedelta(seconds=60), timedelta(days=365)  # a period's and a grace's bounds, as healthchecks'
# A heartbeat's defaults: healthchecks' period and grace; one missed deadline (or failed run) is
# down, one ping back is up.
DEFAULTS = {"period": "1d", "grace": "1h", "failure_threshold": 1, "success_threshold": 1}
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32,128}")

Duration = Annotated[timedelta, BeforeValidator(parse_duration), AfterValidator(within(SHORTEST, LONGEST))]


def token(value: str) -> str:
    """A ping token: 32 to 128 letters, digits, ``-`` or ``_`` (it is a part of a URL's path)."""
    if not _TOKEN.fullmatch(value):
        raise ValueError("a ping token is 32 to 128 letters, digits, '-' or '_'")
    return value


def digest(value: str) -> bytes:
    """What Pulse keeps of a token, and looks a ping up by."""
    return hashlib.sha256(value.encode()).digest()


UPSERT = """
INSERT INTO heartbeat_monitor (component_id, token_sha256, period_seconds, grace_seconds)
VALUES (%(id)s, %(token)s, %(period)s, %(grace)s)
ON CONFLICT (component_id) DO UPDATE
SET token_sha256 = EXCLUDED.token_sha256, period_seconds = EXCLUDED.period_seconds,
    grace_seconds = EXCLUDED.grace_seconds,
    deadline_at = CASE WHEN (heartbeat_monitor.period_seconds, heartbeat_monitor.grace_seconds)
                            = (EXCLUDED.period_seconds, EXCLUDED.grace_seconds)
                       THEN heartbeat_monitor.deadline_at
                       ELSE heartbeat_monitor.last_ping_at
                            + make_interval(secs => EXCLUDED.period_seconds + EXCLUDED.grace_seconds) END
"""


def sync(component_id: int, monitor: tuple[str, timedelta, timedelta] | None) -> None:
    """Make the component a heartbeat monitor with this (token, period, grace), or none, in the
    caller's transaction. A new period or grace moves the deadline to the last ping's plus both."""
    if monitor is None:
        db.execute_sql("DELETE FROM heartbeat_monitor WHERE component_id = %s", (component_id,))
        return
    value, period, grace = monitor
    params = {"id": component_id, "token": digest(value), "period": round(period.total_seconds()),
              "grace": round(grace.total_seconds())}  # fmt: skip
    db.execute_sql(UPSERT, params)
