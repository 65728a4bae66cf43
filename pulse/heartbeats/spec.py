"""A heartbeat monitor in the configuration file: a component of type ``heartbeat``, with when its
job pings (every ``period``, or after each match of a ``cron`` expression in a ``time_zone``), the
grace after it, and its ping token (`pulse.uptime.spec` reads these).

    components:
      - key: nightly-backup
        name: Nightly backup
        type: heartbeat
        cron: "0 3 * * *"
        time_zone: Europe/Berlin
        grace: 1h
        token: ${BACKUP_PING_TOKEN}

The token comes from the file, from an environment variable: applying the file again, or on a new
database, keeps the URL the job pings. Pulse keeps only its SHA-256.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, NamedTuple

from pydantic import AfterValidator, BeforeValidator

from pulse.db import db
from pulse.heartbeats import deadlines
from pulse.inbound.tokens import digest
from pulse.spec import DURATION_SCHEMA, parse_duration, within

SHORTEST, LONGEST = timedelta(seconds=60), timedelta(days=365)  # a period's and a grace's bounds, as healthchecks'
# A heartbeat's defaults: healthchecks' grace; one missed deadline (or failed run) is down, one ping
# back is up. Its period or cron expression it must give.
DEFAULTS = {"grace": "1h", "failure_threshold": 1, "success_threshold": 1}

Duration = Annotated[
    timedelta, BeforeValidator(parse_duration), DURATION_SCHEMA, AfterValidator(within(SHORTEST, LONGEST))
]
Cron = Annotated[str, AfterValidator(deadlines.cron)]
TimeZone = Annotated[str, AfterValidator(deadlines.time_zone)]


class Monitor(NamedTuple):
    """A heartbeat monitor as the file declares it, as its row keeps it: one of ``period_seconds``
    and ``cron``."""

    token: str
    period_seconds: int | None
    cron: str | None
    time_zone: str
    grace_seconds: int


CURRENT = """
SELECT period_seconds, cron, time_zone, grace_seconds, last_ping_at, last_start_at
FROM heartbeat_monitor WHERE component_id = %s FOR UPDATE
"""
UPSERT = """
INSERT INTO heartbeat_monitor (component_id, token_sha256, period_seconds, cron, time_zone, grace_seconds)
VALUES (%(id)s, %(token)s, %(period)s, %(cron)s, %(time_zone)s, %(grace)s)
ON CONFLICT (component_id) DO UPDATE
SET token_sha256 = EXCLUDED.token_sha256, period_seconds = EXCLUDED.period_seconds, cron = EXCLUDED.cron,
    time_zone = EXCLUDED.time_zone, grace_seconds = EXCLUDED.grace_seconds,
    deadline_at = CASE WHEN %(moved)s THEN %(deadline)s ELSE heartbeat_monitor.deadline_at END
"""


def sync(component_id: int, monitor: Monitor | None) -> None:
    """Make the component this heartbeat monitor, or none, in the caller's transaction. A new
    period, cron expression, time zone or grace moves the deadline to the first one they give
    after the last ping (or the run started)."""
    if monitor is None:
        db.execute_sql("DELETE FROM heartbeat_monitor WHERE component_id = %s", (component_id,))
        return
    expected = monitor.period_seconds, monitor.cron, monitor.time_zone
    current = db.execute_sql(CURRENT, (component_id,)).fetchone()
    moved, deadline = False, None
    if current is not None and tuple(current[:4]) != (*expected, monitor.grace_seconds):
        runs, grace = deadlines.runs(*expected), timedelta(seconds=monitor.grace_seconds)
        moved, deadline = True, deadlines.first(runs, grace, *current[4:])
    params = {"id": component_id, "token": digest(monitor.token), "period": monitor.period_seconds,
              "cron": monitor.cron, "time_zone": monitor.time_zone, "grace": monitor.grace_seconds, "moved": moved,
              "deadline": deadline}  # fmt: skip
    db.execute_sql(UPSERT, params)


def document(component_id: int) -> dict[str, Any]:
    """A heartbeat monitor's fields as the file gives them, but its token (only its digest is kept)."""
    row = db.execute_sql(
        "SELECT period_seconds, cron, time_zone, grace_seconds FROM heartbeat_monitor WHERE component_id = %s",
        (component_id,),
    ).fetchone()
    if row is None:
        return {}
    period, cron, time_zone, grace = row
    fields = {"period": period, "cron": cron, "time_zone": time_zone if cron else None, "grace": grace}
    return {name: value for name, value in fields.items() if value is not None}
