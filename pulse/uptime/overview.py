"""The overview `pulse status` shows: each component's status, check kind (an endpoint's), last
check (a heartbeat monitor's last ping, next deadline, and cron expression and time zone if it has
them; a component checked from locations, each location's latest answer and latency), open
incident, uptime over 24 hours, 7 days and 30 days, and the time nobody checked it in each of
these windows, in one query."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pulse.components.status import UNKNOWN, UP
from pulse.db import db
from pulse.models import Organization, utcnow

# A check is up when it observed OPERATIONAL or DEGRADED_PERFORMANCE (slow is up, as status pages
# count it). Uptime over a window is the share of the checks scheduled in it that were up,
# truncated to 0.01 (so 100 means no check failed), and NULL when there was none. A slot nobody
# checked (`pulse.uptime.missed`) is no check: it is left out, and its interval counted as unknown
# time (at the component's interval now). The windows are
# whole UTC hours and days: 24 h is the current hour and the 23 before it, 7 d and 30 d today and
# the 6 or 29 days before.
#
# The figures come from the rollups (`pulse.cleanup.rollups`), which hold every check recorded up
# to their watermark: the daily rows of the days that closed before it, the hourly rows since (and
# of the last 24 hours), and the raw checks recorded after it (a few minutes' worth, found through
# the BRIN index on checked_at). So the cost grows with the number of components, not of checks,
# and the figures are those of the raw checks. Before any rollup, every check is read raw.
#
# The watermark is read first, in the same snapshot (`overview` runs both in one repeatable-read
# transaction), and every bound is a parameter: the planner then ranges over the (period, start)
# index and prunes the partitions of uptime_check, which it cannot do for bounds computed in SQL.
WATERMARK = "SELECT watermark FROM rollup_state WHERE kind = 'uptime'"
OVERVIEW = """
WITH counted AS (
    -- (component, checks, up, unknown, in 24 h, in 7 d, in 30 d)
    SELECT r.component_id, r.checks, r.operational + r.degraded AS up, r.unknown, false AS h24,
           r.start >= %(s7)s AS d7, true AS d30
    FROM component_rollup r
    WHERE r.period = 'day' AND r.start >= %(s30)s AND r.start < %(closed)s
    UNION ALL
    SELECT r.component_id, r.checks, r.operational + r.degraded, r.unknown, r.start >= %(s24)s,
           r.start >= %(closed)s AND r.start >= %(s7)s, r.start >= %(closed)s
    FROM component_rollup r
    WHERE r.period = 'hour' AND r.start >= %(hours)s
    UNION ALL
    SELECT u.component_id, (u.outcome <> %(unknown)s)::int, (u.outcome = ANY(%(up)s))::int,
           (u.outcome = %(unknown)s)::int, u.scheduled_at >= %(s24)s, u.scheduled_at >= %(s7)s, true
    FROM uptime_check u
    WHERE u.checked_at > %(watermark)s AND u.scheduled_at >= %(s30)s
), uptime AS (
    SELECT component_id,
           sum(checks) FILTER (WHERE h24) AS checks_24h, sum(up) FILTER (WHERE h24) AS up_24h,
           sum(checks) FILTER (WHERE d7) AS checks_7d, sum(up) FILTER (WHERE d7) AS up_7d,
           sum(checks) FILTER (WHERE d30) AS checks_30d, sum(up) FILTER (WHERE d30) AS up_30d,
           sum(unknown) FILTER (WHERE h24) AS unknown_24h, sum(unknown) FILTER (WHERE d7) AS unknown_7d,
           sum(unknown) FILTER (WHERE d30) AS unknown_30d
    FROM counted
    GROUP BY component_id
)
SELECT o.slug, c.key, c.name, c.type, c.kind, c.status, c.status_since, c.paused, c.last_checked_at,
       c.last_response_time_ms, i.id, i.title, i.started_at,
       (floor(10000.0 * u.up_24h / nullif(u.checks_24h, 0)) / 100)::float8,
       (floor(10000.0 * u.up_7d / nullif(u.checks_7d, 0)) / 100)::float8,
       (floor(10000.0 * u.up_30d / nullif(u.checks_30d, 0)) / 100)::float8,
       (coalesce(u.unknown_24h, 0) * c.interval_seconds)::int, (coalesce(u.unknown_7d, 0) * c.interval_seconds)::int,
       (coalesce(u.unknown_30d, 0) * c.interval_seconds)::int,
       h.last_ping_at, h.deadline_at, h.cron, h.time_zone, heard.locations
FROM component c
JOIN organization o ON o.id = c.organization_id
LEFT JOIN incident i ON i.component_id = c.id AND i.resolved_at IS NULL
LEFT JOIN uptime u ON u.component_id = c.id
LEFT JOIN heartbeat_monitor h ON h.component_id = c.id
LEFT JOIN LATERAL (  -- a component checked from locations: what each found of its latest slot it answered
    SELECT json_object_agg(l.location, json_build_object(
               'scheduled_at', l.scheduled_at, 'seen', l.seen, 'abstained', l.abstained,
               'response_time_ms', l.response_time_ms, 'reason', l.reason)) AS locations
    FROM unnest(c.locations) AS listed (location)
    CROSS JOIN LATERAL (
        SELECT * FROM location_check l WHERE l.component_id = c.id AND l.location = listed.location
        ORDER BY l.scheduled_at DESC LIMIT 1
    ) l
) heard ON true
WHERE %(organization)s::text IS NULL OR o.slug = %(organization)s
ORDER BY o.slug, c.key
"""
LONG_AGO = datetime(1970, 1, 1, tzinfo=UTC)  # a watermark before any check: nothing rolled up


def bounds(now: datetime, watermark: datetime | None) -> dict[str, datetime]:
    """The windows' starts at ``now``, and which rollups to read: days before ``closed``, hours
    from ``hours``, raw checks recorded after ``watermark``."""
    hour = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    day = hour.replace(hour=0)
    watermark = watermark or LONG_AGO
    closed = watermark.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    values = {"s24": hour - timedelta(hours=23), "s7": day - timedelta(days=6), "s30": day - timedelta(days=29)}
    return {**values, "watermark": watermark, "closed": closed, "hours": min(values["s24"], max(closed, values["s30"]))}


def overview(organization: str | None = None, *, now: datetime | None = None) -> list[dict[str, Any]]:
    """Every component (of one organization, given its slug) with its status, last check, open
    incident and uptime percentages over 24 hours, 7 days and 30 days (at ``now``), for `pulse
    status`. LookupError for an organization that does not exist."""
    if organization and not Organization.select().where(Organization.slug == organization).exists():
        raise LookupError(f"no organization {organization!r}")
    rows = []
    for (
        slug,
        key,
        name,
        type_,
        kind,
        current,
        since,
        paused,
        checked,
        response_ms,
        incident_id,
        title,
        started,
        uptime_24h,
        uptime_7d,
        uptime_30d,
        unknown_24h,
        unknown_7d,
        unknown_30d,
        pinged,
        deadline,
        cron,
        zone,
        locations,
    ) in _read(now or utcnow(), organization):
        rows.append(
            {
                "organization": slug,
                "key": key,
                "name": name,
                "type": type_,
                "kind": kind if type_ == "ENDPOINT" else None,  # how an endpoint is checked (http, tcp…)
                "status": current,
                "status_since": since.isoformat(),
                "paused": paused,
                "last_checked_at": checked and checked.isoformat(),
                "last_response_time_ms": response_ms,
                "incident": incident_id and {"id": incident_id, "title": title, "started_at": started.isoformat()},
                "uptime_24h": uptime_24h,
                "uptime_7d": uptime_7d,
                "uptime_30d": uptime_30d,
                "unknown_24h_s": unknown_24h,  # seconds of slots nobody checked (pulse.uptime.missed)
                "unknown_7d_s": unknown_7d,
                "unknown_30d_s": unknown_30d,
                "last_ping_at": pinged and pinged.isoformat(),  # a heartbeat monitor's, and the next
                "deadline_at": deadline and deadline.isoformat(),
                "cron": cron,  # a heartbeat monitor's on cron, and its time zone
                "time_zone": cron and zone,
                "locations": locations,  # checked from locations: each one's latest answer
            }
        )
    return rows


def _read(now: datetime, organization: str | None) -> list[tuple[Any, ...]]:
    with db.atomic():
        db.execute_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")  # one snapshot for both reads
        db.execute_sql("SET LOCAL jit = off")  # compiling it would cost more than running it
        # The per-component sums are an estimate the planner cannot make (it guesses 200 groups
        # for a grouped union): joined in a nested loop, 20,000 components took 44 s, hashed 0.1 s.
        db.execute_sql("SET LOCAL enable_nestloop = off")
        row = db.execute_sql(WATERMARK).fetchone()
        values = {**bounds(now, row and row[0]), "organization": organization, "up": list(UP), "unknown": UNKNOWN}
        return db.execute_sql(OVERVIEW, values).fetchall()
