"""Hourly and daily rollups of the history tables, so that reading months of history costs a row
per component and hour or day, not a row per check, and outlives the raw rows.

Each kind (uptime checks per component; the data points of metrics, extracted values and
calculated metrics) keeps a *watermark* in ``rollup_state``: every rollup row holds exactly the
raw rows recorded at or before it (``checked_at`` / ``created_at``). A reader adds the raw rows
recorded after it (a few minutes' worth) and gets exact figures; `pulse.uptime.overview` does.

A pass moves the watermark forward in steps (`STEP` of recording time each, one transaction
each; longer over a stretch where nothing was recorded, as after an outage, but never more than
`MAX_ROWS` rows). A step finds the hours that rows recorded since the last step belong to (late ones
included: a check recorded hours after its slot, a requeued dead letter) and computes each of
those hours again from all its raw rows, then every day that closed with the step or that a late
row touched, from its hours. Computing from the raw rows, never adding to a total, makes a step
that runs twice, or two passes at once, give the same rows. A day's p95 comes from its raw rows
once the day is over (`p95_pending` until then).

The watermark stays `SETTLE` behind now, for transactions that set their time a moment before
they commit; each step also looks `LOOKBACK` before the watermark for rows that committed later
than that (or whose host's clock is behind), so such a row is rolled up by the next pass.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from datetime import datetime, timedelta

from pulse.cleanup.spec import seconds_sql
from pulse.components.status import UNKNOWN
from pulse.db import db
from pulse.models import utcnow

logger = logging.getLogger(__name__)

STEP = timedelta(hours=1)
MAX_STEP = timedelta(days=30)  # a step over a stretch with nothing recorded grows, up to this
MAX_ROWS = 2_000_000  # rows recorded in a step longer than STEP, at most
SETTLE = timedelta(seconds=60)
LOOKBACK = timedelta(minutes=10)
WORK_MEM = "128MB"  # for the sorts of a step: 1.2 M checks an hour at 20,000 components
P95_BATCH = 200  # component-days per statement: each reads a day of one component's checks


@dataclasses.dataclass(frozen=True)
class Kind:
    """One history table and its rollups.

    Parameters:
      name: the kind, as ``rollup_state`` names it.
      raw: the history table; ``owner`` its column naming whose row it is, ``recorded`` when the
        row was written.
      owners: a relation of (id, organization_id) for the owners, to find each one's retention.
      rule: the retention rule of the raw table (`pulse.cleanup.spec`).
      table: the rollup table.
      hour: the rollup columns (after owner, period and start) and their aggregates over raw rows ``u``.
      day: the same columns and their aggregates over hourly rollup rows ``r``.
      flag: SQL, per touched hour (``owner``, ``start``): ``t.flagged`` for the hour's aggregates.
    """

    name: str
    raw: str
    owner: str
    recorded: str
    owners: str
    rule: str
    table: str
    hour: dict[str, str]
    day: dict[str, str]
    flag: str = "false"


_SERIES_HOUR = {
    "points": "count(*)",
    "count": "count(u.value)",
    "min": "min(u.value)",
    "max": "max(u.value)",
    "sum": "coalesce(sum(u.value), 0)",
    "last": "(array_agg(u.value ORDER BY u.scheduled_at DESC) FILTER (WHERE u.value IS NOT NULL))[1]",
    "last_at": "max(u.scheduled_at) FILTER (WHERE u.value IS NOT NULL)",
}
_SERIES_DAY = {
    "points": "sum(r.points)",
    "count": "sum(r.count)",
    "min": "min(r.min)",
    "max": "max(r.max)",
    "sum": "sum(r.sum)",
    "last": "(array_agg(r.last ORDER BY r.last_at DESC) FILTER (WHERE r.last_at IS NOT NULL))[1]",
    "last_at": "max(r.last_at)",
}
_UP = "('OPERATIONAL', 'DEGRADED_PERFORMANCE')"

UPTIME = Kind(
    name="uptime",
    raw="uptime_check",
    owner="component_id",
    recorded="checked_at",
    owners="component",
    rule="uptime_checks",
    table="component_rollup",
    hour={
        # A slot nobody checked (`pulse.uptime.missed`) is no check: counted apart, as unknown.
        "checks": f"count(*) FILTER (WHERE u.outcome <> '{UNKNOWN}')",
        "operational": "count(*) FILTER (WHERE u.outcome = 'OPERATIONAL')",
        "degraded": "count(*) FILTER (WHERE u.outcome = 'DEGRADED_PERFORMANCE')",
        "outage": f"count(*) FILTER (WHERE u.outcome NOT IN {_UP} AND u.outcome <> '{UNKNOWN}')",
        # A window is looked for check by check only in the hours one overlaps (`Kind.flag`).
        "maintenance": f"""count(*) FILTER (WHERE u.outcome <> '{UNKNOWN}' AND CASE WHEN t.flagged THEN EXISTS (
            SELECT 1 FROM maintenance_window m
            WHERE m.component_id = u.component_id AND m.starts_at <= u.scheduled_at AND m.ends_at > u.scheduled_at)
            END)""",
        "unknown": f"count(*) FILTER (WHERE u.outcome = '{UNKNOWN}')",
        "responses": "count(u.response_time_ms)",
        "response_ms_sum": "coalesce(sum(u.response_time_ms), 0)",
        "p95_ms": "percentile_disc(0.95) WITHIN GROUP (ORDER BY u.response_time_ms)",
        "max_ms": "max(u.response_time_ms)",
    },
    day={
        **{
            name: f"sum(r.{name})" for name in ("checks", "operational", "degraded", "outage", "maintenance", "unknown")
        },
        "responses": "sum(r.responses)",
        "response_ms_sum": "sum(r.response_ms_sum)",
        "max_ms": "max(r.max_ms)",
        "p95_pending": "true",  # p95_ms: from the day's raw checks, by `daily_p95`
    },
    flag="""EXISTS (SELECT 1 FROM maintenance_window m
            WHERE m.component_id = owner AND m.starts_at < start + interval '1 hour' AND m.ends_at > start)""",
)


def _series(name: str, raw: str, owner: str, owners: str, rule: str, table: str) -> Kind:
    """A kind of data points (a value, or none, per slot), rolled up into `_SERIES_HOUR` columns."""
    return Kind(name, raw, owner, "created_at", owners, rule, table, _SERIES_HOUR, _SERIES_DAY)


METRICS = _series("metrics", "metric_data_point", "metrics_query_id", "metrics_query", "metric_points", "metric_rollup")
EXTRACTED = _series(
    "extracted",
    "extracted_value_data_point",
    "extracted_value_id",
    "(SELECT e.id, c.organization_id FROM extracted_value e JOIN component c ON c.id = e.component_id)",
    "extracted_points",
    "extracted_rollup",
)
CALCULATED = _series(
    "calculated",
    "calculated_metric_data_point",
    "calculated_metric_id",
    "calculated_metric",
    "calculated_points",
    "calculated_rollup",
)
KINDS = (UPTIME, METRICS, EXTRACTED, CALCULATED)


def _upsert(kind: Kind, columns: dict[str, str], source: str, group: str) -> str:
    names = ", ".join(columns)
    updates = ", ".join(f"{name} = excluded.{name}" for name in columns)
    return (
        f"INSERT INTO {kind.table} ({kind.owner}, period, start, {names}) "
        f"SELECT {source}, {', '.join(columns.values())} {group} "
        f"ON CONFLICT ({kind.owner}, period, start) DO UPDATE SET {updates}"
    )


def _touched(kind: Kind) -> str:
    """The hours the rows recorded in (since, until] belong to, but those less than a day inside
    their organization's raw retention: cleanup may have deleted some of their rows already."""
    return f"""
CREATE TEMPORARY TABLE touched ON COMMIT DROP AS
SELECT owner, start, {kind.flag} AS flagged FROM (
    SELECT DISTINCT u.{kind.owner} AS owner, date_trunc('hour', u.scheduled_at, 'UTC') AS start
    FROM {kind.raw} u
    JOIN {kind.owners} o ON o.id = u.{kind.owner}
    JOIN organization g ON g.id = o.organization_id
    WHERE u.{kind.recorded} > %(since)s AND u.{kind.recorded} <= %(until)s
      AND u.scheduled_at >= %(now)s + interval '1 day' - {seconds_sql(kind.rule)} * interval '1 second'
) hours
"""


def _hours(kind: Kind, *, late: bool) -> str:
    """Each touched hour, computed from its raw rows recorded by ``until``: those from ``low`` on
    (the hours of rows recorded on time) from one range of the table, the others (``late``) hour
    by hour through the (owner, slot) index. Without the range, PostgreSQL joined every row of
    every partition with the touched hours."""
    band = (
        "t.start < %(low)s"
        if late
        else "t.start >= %(low)s AND u.scheduled_at >= %(low)s AND u.scheduled_at < %(high)s"
    )
    return _upsert(
        kind,
        kind.hour,
        "t.owner, 'hour', t.start",
        f"""FROM touched t
JOIN {kind.raw} u ON u.{kind.owner} = t.owner
 AND u.scheduled_at >= t.start AND u.scheduled_at < t.start + interval '1 hour'
WHERE u.{kind.recorded} <= %(until)s AND {band}
GROUP BY t.owner, t.start""",
    )


def _days(kind: Kind) -> str:
    """The days that closed with this step (for every owner with hours in them), and the closed
    days a touched hour belongs to, computed from their hours."""
    return _upsert(
        kind,
        kind.day,
        "d.owner, 'day', d.start",
        f"""FROM (
    SELECT DISTINCT owner, date_trunc('day', start, 'UTC') AS start FROM touched
    WHERE start < date_trunc('day', %(until)s, 'UTC')
    UNION
    SELECT DISTINCT {kind.owner}, date_trunc('day', start, 'UTC') FROM {kind.table}
    WHERE period = 'hour' AND start >= date_trunc('day', %(since)s, 'UTC')
      AND start < date_trunc('day', %(until)s, 'UTC')
) d
JOIN {kind.table} r ON r.{kind.owner} = d.owner AND r.period = 'hour'
 AND r.start >= d.start AND r.start < d.start + interval '1 day'
GROUP BY d.owner, d.start""",
    )


@dataclasses.dataclass
class Progress:
    steps: int = 0
    hours: int = 0
    days: int = 0
    watermark: datetime | None = None
    caught_up: bool = False
    size: timedelta = STEP  # of the next step


def catch_up(kind: Kind, *, now: datetime | None = None, budget_s: float = 240.0) -> Progress:
    """Move the kind's watermark to `SETTLE` before ``now``, step by step, for at most
    ``budget_s`` seconds; then compute the p95 of the days that closed (uptime). Caught up means
    both are done. A pass that finds another one stepping leaves the work to it."""
    deadline = time.monotonic() + budget_s
    now = now or utcnow()
    progress = Progress()
    # A step and a batch of p95 at least, however short the budget: every pass gets further.
    while (done := step(kind, now, progress)) is False and time.monotonic() < deadline:
        pass
    if done is None:  # another pass holds the state
        return progress
    progress.caught_up = done
    if kind is UPTIME:
        while daily_p95():
            if time.monotonic() >= deadline:
                progress.caught_up = False  # days may be left pending
                break
    return progress


def step(kind: Kind, now: datetime, progress: Progress) -> bool | None:
    """One step, in one transaction: True when the watermark was caught up already, None when
    another pass holds it."""
    with db.atomic():
        db.execute_sql("INSERT INTO rollup_state (kind) VALUES (%s) ON CONFLICT DO NOTHING", (kind.name,))
        row = db.execute_sql(
            "SELECT watermark FROM rollup_state WHERE kind = %s FOR UPDATE SKIP LOCKED", (kind.name,)
        ).fetchone()
        if row is None:
            return None
        since = row[0]
        if since is None:  # nothing rolled up yet: from the oldest row
            (first,) = db.execute_sql(f"SELECT min({kind.recorded}) FROM {kind.raw}").fetchone()
            if first is None:
                return True
            since = first - timedelta(microseconds=1)
        size = max(progress.size, STEP)
        while since + size < now - SETTLE and size > STEP and _more_than(kind, since, since + size, MAX_ROWS):
            size = max(STEP, size / 2)
        until = min(since + size, now - SETTLE)
        if until <= since:
            return True
        db.execute_sql("SET LOCAL jit = off")  # compiling these statements costs more than it saves
        db.execute_sql(f"SET LOCAL work_mem = '{WORK_MEM}'")  # an hour of checks sorted in memory, not on disk
        values = {"since": since - LOOKBACK, "until": until, "now": now}
        db.execute_sql(_touched(kind), values)
        db.execute_sql("ANALYZE touched")  # how many hours: the plan that computes them depends on it
        # Rows recorded on time belong to the hours from a little before the window to its end.
        low = (since - LOOKBACK - timedelta(hours=1)).replace(minute=0, second=0, microsecond=0)
        (latest,) = db.execute_sql("SELECT max(start) FROM touched").fetchone()
        values.update(low=low, high=max(latest or low, low) + timedelta(hours=1))
        hours = db.execute_sql(_hours(kind, late=False), values).rowcount
        hours += db.execute_sql(_hours(kind, late=True), values).rowcount
        progress.hours += hours
        progress.days += db.execute_sql(_days(kind), {**values, "since": since}).rowcount
        progress.size = min(size * 2, MAX_STEP) if hours == 0 else size
        db.execute_sql("UPDATE rollup_state SET watermark = %s, updated_at = now() WHERE kind = %s", (until, kind.name))
    progress.steps += 1
    progress.watermark = until
    return False


def _more_than(kind: Kind, since: datetime, until: datetime, rows: int) -> bool:
    """Whether more than ``rows`` rows were recorded in (since, until]."""
    recorded = f"{kind.recorded} > %s AND {kind.recorded} <= %s"
    query = f"SELECT count(*) FROM (SELECT FROM {kind.raw} WHERE {recorded} LIMIT %s) r"
    return int(db.execute_sql(query, (since, until, rows + 1)).fetchone()[0]) > rows


_P95 = f"""
WITH pending AS (
    SELECT r.component_id, r.start FROM component_rollup r, rollup_state s
    WHERE r.p95_pending AND r.period = 'day' AND s.kind = 'uptime' AND r.start + interval '1 day' <= s.watermark
    ORDER BY r.start LIMIT {P95_BATCH}
    FOR UPDATE OF r SKIP LOCKED
)
UPDATE component_rollup r SET p95_pending = false, p95_ms = coalesce((
    SELECT percentile_disc(0.95) WITHIN GROUP (ORDER BY u.response_time_ms) FROM uptime_check u
    WHERE u.component_id = p.component_id AND u.scheduled_at >= p.start AND u.scheduled_at < p.start + interval '1 day'
), r.p95_ms)
FROM pending p
WHERE r.component_id = p.component_id AND r.period = 'day' AND r.start = p.start
"""


def daily_p95() -> int:
    """The p95 response time of up to `P95_BATCH` days that are over, from their raw checks (a
    day whose checks are gone keeps the p95 it had). Returns how many were computed."""
    return db.execute_sql(_P95).rowcount


def watermarks() -> dict[str, datetime | None]:
    """Each kind's watermark (None: nothing rolled up yet)."""
    found = dict(db.execute_sql("SELECT kind, watermark FROM rollup_state").fetchall())
    return {kind.name: found.get(kind.name) for kind in KINDS}
