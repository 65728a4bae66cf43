"""The overview `pulse status` shows: each component's status, last check, open incident and
uptime over 24 hours, 7 days and 30 days, in one query."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pulse.components.status import UP
from pulse.db import db
from pulse.models import Organization, utcnow

# A check is up when it observed OPERATIONAL or DEGRADED_PERFORMANCE (slow is up, as status pages
# count it). Uptime over a window is the share of the checks scheduled in it that were up,
# truncated to 0.01 (so 100 means no check failed), and NULL when there was none. The windows are
# whole UTC hours and days: 24 h is the current hour and the 23 before it, 7 d and 30 d today and
# the 6 or 29 days before.
#
# The figures come from the rollups (`pulse.cleanup.rollups`), which hold every check recorded up
# to their watermark: the daily rows of the days that closed before it, the hourly rows since (and
# of the last 24 hours), and the raw checks recorded after it (a few minutes' worth, found through
# the BRIN index on checked_at). So the cost grows with the number of components, not of checks,
# and the figures are those of the raw checks. Before any rollup, every check is read raw.
OVERVIEW = """
WITH bounds AS (
    SELECT coalesce((SELECT watermark FROM rollup_state WHERE kind = 'uptime'), '-infinity') AS watermark,
           date_trunc('hour', %(now)s::timestamptz, 'UTC') - interval '23 hours' AS s24,
           date_trunc('day', %(now)s::timestamptz, 'UTC') - interval '6 days' AS s7,
           date_trunc('day', %(now)s::timestamptz, 'UTC') - interval '29 days' AS s30
), parts AS (
    SELECT b.*, coalesce(date_trunc('day', b.watermark, 'UTC'), '-infinity') AS closed FROM bounds b
), counted AS (
    -- (component, start, checks, up, in 24 h, in 7 d, in 30 d)
    SELECT r.component_id, r.checks, r.operational + r.degraded AS up, false AS h24, r.start >= p.s7 AS d7, true AS d30
    FROM component_rollup r, parts p
    WHERE r.period = 'day' AND r.start >= p.s30 AND r.start < p.closed
    UNION ALL
    SELECT r.component_id, r.checks, r.operational + r.degraded, r.start >= p.s24,
           r.start >= p.closed AND r.start >= p.s7, r.start >= p.closed
    FROM component_rollup r, parts p
    WHERE r.period = 'hour' AND r.start >= least(p.s24, greatest(p.closed, p.s30))
    UNION ALL
    SELECT u.component_id, 1, (u.outcome = ANY(%(up)s))::int, u.scheduled_at >= p.s24, u.scheduled_at >= p.s7, true
    FROM uptime_check u, parts p
    WHERE u.checked_at > p.watermark AND u.scheduled_at >= p.s30
), uptime AS (
    SELECT component_id,
           sum(checks) FILTER (WHERE h24) AS checks_24h, sum(up) FILTER (WHERE h24) AS up_24h,
           sum(checks) FILTER (WHERE d7) AS checks_7d, sum(up) FILTER (WHERE d7) AS up_7d,
           sum(checks) FILTER (WHERE d30) AS checks_30d, sum(up) FILTER (WHERE d30) AS up_30d
    FROM counted
    GROUP BY component_id
)
SELECT o.slug, c.key, c.name, c.type, c.status, c.status_since, c.paused, c.last_checked_at,
       c.last_response_time_ms, i.id, i.title, i.started_at,
       (floor(10000.0 * u.up_24h / nullif(u.checks_24h, 0)) / 100)::float8,
       (floor(10000.0 * u.up_7d / nullif(u.checks_7d, 0)) / 100)::float8,
       (floor(10000.0 * u.up_30d / nullif(u.checks_30d, 0)) / 100)::float8
FROM component c
JOIN organization o ON o.id = c.organization_id
LEFT JOIN incident i ON i.component_id = c.id AND i.resolved_at IS NULL
LEFT JOIN uptime u ON u.component_id = c.id
WHERE %(organization)s::text IS NULL OR o.slug = %(organization)s
ORDER BY o.slug, c.key
"""


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
    ) in db.execute_sql(OVERVIEW, {"now": now or utcnow(), "organization": organization, "up": list(UP)}).fetchall():
        rows.append(
            {
                "organization": slug,
                "key": key,
                "name": name,
                "type": kind,
                "status": current,
                "status_since": since.isoformat(),
                "paused": paused,
                "last_checked_at": checked and checked.isoformat(),
                "last_response_time_ms": response_ms,
                "incident": incident_id and {"id": incident_id, "title": title, "started_at": started.isoformat()},
                "uptime_24h": uptime_24h,
                "uptime_7d": uptime_7d,
                "uptime_30d": uptime_30d,
            }
        )
    return rows
