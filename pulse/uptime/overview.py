"""The 30-day overview `pulse status` shows: each component's status, last check, open incident
and uptime over 24 hours, 7 days and 30 days, in one query."""

from __future__ import annotations

from typing import Any

from pulse.components.status import UP
from pulse.db import db
from pulse.models import Organization, utcnow

# A check is up when it observed OPERATIONAL or DEGRADED_PERFORMANCE (slow is up, as status pages
# count it). Uptime over a window is the share of the checks scheduled in it that were up,
# truncated to 0.01 (so 100 means no check failed), and NULL when there was none.
#
# One pass over the last 30 days of checks, grouped by component. Rows arrive in time order, so a
# component's checks are spread one per heap page: reading them through the unique
# (component_id, scheduled_at) index costs a page per check (10 times slower, measured), where a
# scan reads each page once. A check is recorded after its slot, so a bound on checked_at (an
# hour looser, for clock skew between hosts) leaves out nothing of the window, and lets the BRIN
# index on checked_at skip the older part of the table.
OVERVIEW = """
WITH uptime AS (
    SELECT component_id,
           count(*) FILTER (WHERE scheduled_at > %(now)s - interval '24 hours') AS checks_24h,
           count(*) FILTER (WHERE scheduled_at > %(now)s - interval '24 hours' AND up) AS up_24h,
           count(*) FILTER (WHERE scheduled_at > %(now)s - interval '7 days') AS checks_7d,
           count(*) FILTER (WHERE scheduled_at > %(now)s - interval '7 days' AND up) AS up_7d,
           count(*) AS checks_30d,
           count(*) FILTER (WHERE up) AS up_30d
    FROM (
        SELECT component_id, scheduled_at, outcome = ANY(%(up)s) AS up
        FROM uptime_check
        WHERE scheduled_at > %(now)s - interval '30 days' AND checked_at > %(now)s - interval '30 days 1 hour'
    ) checks
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


def overview(organization: str | None = None) -> list[dict[str, Any]]:
    """Every component (of one organization, given its slug) with its status, last check, open
    incident and uptime percentages over 24 hours, 7 days and 30 days, for `pulse status`.
    LookupError for an organization that does not exist."""
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
    ) in db.execute_sql(OVERVIEW, {"now": utcnow(), "organization": organization, "up": list(UP)}).fetchall():
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
