"""One component's uptime as the API answers it: over 24 hours, 7, 30 and 90 days, and day by day
(UTC days, up to `MAX_DAYS`), with the time nobody checked it, counted as `pulse.uptime.overview`
counts them for `pulse status` (its windows, rollups and watermark: see there) and read from the
same three places in one snapshot: the daily rollups of the days closed before the watermark's
day, the hourly ones since (and of the last 24 hours), and the raw checks recorded after the
watermark. So a 90-day answer reads about 120 rows of one component, whatever its interval.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pulse.components.status import UNKNOWN, UP
from pulse.db import db
from pulse.uptime.overview import WATERMARK, bounds

MAX_DAYS = 90
COUNTED = """
SELECT 'day', r.start, r.checks, r.operational + r.degraded, r.unknown
FROM component_rollup r
WHERE r.component_id = %(component)s AND r.period = 'day' AND r.start >= %(s90)s AND r.start < %(closed)s
UNION ALL
SELECT 'hour', r.start, r.checks, r.operational + r.degraded, r.unknown
FROM component_rollup r
WHERE r.component_id = %(component)s AND r.period = 'hour' AND r.start >= %(hours)s
UNION ALL
SELECT 'raw', u.scheduled_at, (u.outcome <> %(unknown)s)::int, (u.outcome = ANY(%(up)s))::int,
       (u.outcome = %(unknown)s)::int
FROM uptime_check u
WHERE u.component_id = %(component)s AND u.checked_at > %(watermark)s AND u.scheduled_at >= %(s90)s
"""


def percent(up: int, checks: int) -> float | None:
    """The share of ``checks`` that were up, truncated to 0.01 (100 means none failed); None for no check."""
    return (10000 * up // checks) / 100 if checks else None


def uptime(component_id: int, interval_s: int, now: datetime, days: int = 0) -> dict[str, Any]:
    """The component's uptime at ``now``: ``windows`` (24h, 7d, 30d, 90d) each with its
    ``uptime``, ``checks`` and ``unknown_s`` (seconds of slots nobody checked, at the component's
    interval ``interval_s`` now), and, for ``days`` from 1 to `MAX_DAYS`, ``days``: the same for
    each of the last ``days`` UTC days, oldest first, today's included."""
    with db.atomic():
        db.execute_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")  # one snapshot for both reads
        row = db.execute_sql(WATERMARK).fetchone()
        edges = bounds(now, row and row[0])
        today = edges["s7"] + timedelta(days=6)
        s90 = today - timedelta(days=MAX_DAYS - 1)
        hours = min(edges["s24"], max(edges["closed"], s90))
        values = {**edges, "s90": s90, "hours": hours, "component": component_id, "up": list(UP), "unknown": UNKNOWN}
        counted = db.execute_sql(COUNTED, values).fetchall()
    starts = {"24h": edges["s24"], "7d": edges["s7"], "30d": edges["s30"], "90d": s90}
    windows = {name: [0, 0, 0] for name in starts}
    first = today - timedelta(days=days - 1)
    daily = {first + timedelta(days=n): [0, 0, 0] for n in range(days)}
    for period, start, checks, up, unknown in counted:
        closed = period == "raw" or start >= edges["closed"]  # hours since the watermark's day, raw checks
        for name, begin in starts.items():
            hourly = name == "24h"
            if start >= begin and (period != "day" or not hourly) and (period != "hour" or hourly or closed):
                _add(windows[name], checks, up, unknown)
        if period == "day" or closed:
            day = start.astimezone(today.tzinfo).replace(hour=0, minute=0, second=0, microsecond=0)
            if day in daily:
                _add(daily[day], checks, up, unknown)
    shown: dict[str, Any] = {"windows": {name: _shown(total, interval_s) for name, total in windows.items()}}
    if days:
        shown["days"] = [{"date": day.date().isoformat(), **_shown(total, interval_s)} for day, total in daily.items()]
    return shown


def _add(total: list[int], checks: int, up: int, unknown: int) -> None:
    total[0] += checks
    total[1] += up
    total[2] += unknown


def _shown(total: list[int], interval_s: int) -> dict[str, Any]:
    checks, up, unknown = total
    return {"uptime": percent(up, checks), "checks": checks, "unknown_s": unknown * interval_s}
