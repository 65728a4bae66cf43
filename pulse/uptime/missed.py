"""Honest uptime: the slots nobody checked, recorded as such.

When Pulse itself is not checking (its workers or scheduler down, a location silent, the
database away) a component's slots pass with no check row: they are not up, and not down either.
`sweep` walks each checked component's grid of slots (``checking_since`` plus whole intervals:
`pulse.recurring.grid`) and records each slot without a row, once its time is past, as an
``uptime_check`` row whose outcome is `UNKNOWN`. Uptime leaves them out (the share of the checks
made that were up), the rollups count them apart (``unknown``), `pulse status` shows the time they
cover, and they never change a status nor open an incident: nothing but this module writes them,
and it touches no component.

A slot's time is past `MARGIN` after its timeout: a check is recorded within its timeout of its slot,
and a slot checked from locations has its verdict taken by then (`pulse.locations.dispatch`). A
check that comes later still (a message delivered late) replaces its slot's unknown row and is
applied as any check (`pulse.uptime.record`).

The sweep keeps in ``rollup_state`` (kind ``missed``) the time up to which every slot was looked
at, and goes on from there, `CHUNK` of slots a transaction: after workers were down for hours,
the next sweep records those hours in steps, within `BUDGET_S`, the rest left for the next one. The
first sweep looks `FIRST` back. The slots before a component's grid began (created, rescheduled or
resumed since) and those of a paused component were not expected, and are not recorded.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

from pulse.components.status import UNKNOWN
from pulse.db import db
from pulse.models import utcnow

logger = logging.getLogger(__name__)

MARGIN = timedelta(seconds=60)  # after a slot's timeout, before it is taken for missed
CHUNK = timedelta(minutes=10)  # of slots, a transaction
FIRST = timedelta(hours=1)  # looked back by the first sweep
BUDGET_S = 60.0  # seconds a sweep spends on chunks before it leaves the rest to the next
REASON = "not checked: no check of this slot was recorded in time (Pulse's workers, scheduler or locations were down)"

STATE = "SELECT watermark FROM rollup_state WHERE kind = 'missed' FOR UPDATE"
START = "INSERT INTO rollup_state (kind, watermark, updated_at) VALUES ('missed', NULL, %s) ON CONFLICT DO NOTHING"
MOVE = "UPDATE rollup_state SET watermark = %(until)s, updated_at = %(now)s WHERE kind = 'missed'"
LONGEST_TIMEOUT = "SELECT coalesce(max(timeout_ms), 0) FROM component WHERE type = 'ENDPOINT' AND NOT paused"

# The slots of each checked component after %(after)s and up to %(until)s on its grid, without a
# row: an unknown row each. The first slot after %(after)s is counted from the grid's start. Each
# slot's row is looked for by the unique index, in the partition of its day (pruned as the query
# runs): a LATERAL with a LIMIT keeps that plan, whose cost is the number of slots. An anti-join
# the planner may choose instead reads the whole day's partition, through a BRIN range that the
# last hour's rows leave unsummarized (3 s a sweep at 20,000 components every 30 s, against about
# 0.5 s with a CI run beside it).
RECORD = f"""
WITH recorded AS (
    INSERT INTO uptime_check (component_id, scheduled_at, checked_at, success, outcome, error)
    SELECT c.id, s.slot, %(now)s, false, '{UNKNOWN}', %(reason)s
    FROM component c
    CROSS JOIN LATERAL generate_series(
        c.checking_since + make_interval(secs => c.interval_seconds * greatest(
            0, floor(extract(epoch FROM %(after)s - c.checking_since) / c.interval_seconds) + 1)),
        %(until)s,
        make_interval(secs => c.interval_seconds)
    ) AS s (slot)
    LEFT JOIN LATERAL (
        SELECT true AS found FROM uptime_check u WHERE u.component_id = c.id AND u.scheduled_at = s.slot LIMIT 1
    ) AS u ON true
    WHERE c.type = 'ENDPOINT' AND NOT c.paused AND c.checking_since <= %(until)s AND u.found IS NULL
    ON CONFLICT DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM recorded
"""


def sweep(now: datetime | None = None) -> int:
    """Record as unknown every slot past its time since the last sweep; returns how many."""
    now = now or utcnow()
    started = time.monotonic()
    with db.atomic():
        db.execute_sql(START, (now,))
        longest = timedelta(milliseconds=db.execute_sql(LONGEST_TIMEOUT).fetchone()[0])
    end = now - longest - MARGIN
    recorded = 0
    while time.monotonic() - started < BUDGET_S:
        with db.atomic():
            (watermark,) = db.execute_sql(STATE).fetchone()  # two sweeps at once take turns here
            after = watermark or end - FIRST
            if after >= end:
                break
            until = min(after + CHUNK, end)
            values = {"after": after, "until": until, "now": utcnow(), "reason": REASON}
            recorded += db.execute_sql(RECORD, values).fetchone()[0]
            db.execute_sql(MOVE, values)
    if recorded:
        logger.warning(
            "Recorded %d slots as unknown: no check of them was recorded in time (Pulse was not checking); "
            "they count neither up nor down.",
            recorded,
        )
    return recorded
