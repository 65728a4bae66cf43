"""``GET /api/v1/components/{key}/checks``: a component's check history (scope ``read``), newest
slot first a page at a time (`pulse.api.pages`, the cursor being the last slot shown), between
``since`` (included) and ``until`` (excluded). Each check: its slot, when it was recorded, what it
observed (``outcome``: a component status, or UNKNOWN for a slot nobody checked), the response
time and status code, and why it failed (the error, or the failed conditions as they resolved:
the text an incident's update says), null when it passed. Checks are kept as long as the
organization's retention says (`pulse.cleanup`); older history is in the uptime's daily buckets.
"""

from __future__ import annotations

from typing_extensions import TypedDict

from pulse.api import pages, params
from pulse.api.auth import Call
from pulse.api.components import named
from pulse.api.declared import Operation
from pulse.models import UptimeCheck

SINCE = params.Instant("since", "Only the checks of this slot or later.")
UNTIL = params.Instant("until", "Only the checks of slots before this one.")


class CheckView(TypedDict):
    at: str
    checked_at: str
    outcome: str
    success: bool
    response_time_ms: int | None
    status_code: int | None
    reason: str | None


class CheckPage(TypedDict):
    checks: list[CheckView]
    next_cursor: str | None


def index(call: Call) -> CheckPage:
    limit = pages.limit(call.query)
    since, until = SINCE.read(call.query), UNTIL.read(call.query)
    found = named(call)
    query = UptimeCheck.select(
        UptimeCheck.scheduled_at,
        UptimeCheck.checked_at,
        UptimeCheck.outcome,
        UptimeCheck.success,
        UptimeCheck.response_time_ms,
        UptimeCheck.status_code,
        UptimeCheck.error,
        UptimeCheck.condition_results,
    ).where(UptimeCheck.component == found.id)
    if since is not None:
        query = query.where(UptimeCheck.scheduled_at >= since)
    before = pages.after_instant(call.query)
    if before is not None:
        until = before if until is None else min(until, before)
    if until is not None:
        query = query.where(UptimeCheck.scheduled_at < until)
    rows, next_cursor = pages.take(query, UptimeCheck.scheduled_at.desc(), limit, "scheduled_at")
    return {"checks": [shown(r) for r in rows], "next_cursor": next_cursor}


def shown(row: UptimeCheck) -> CheckView:
    return {
        "at": row.scheduled_at.isoformat(),
        "checked_at": row.checked_at.isoformat(),
        "outcome": row.outcome,
        "success": row.success,
        "response_time_ms": row.response_time_ms,
        "status_code": row.status_code,
        "reason": reason(row),
    }


def reason(row: UptimeCheck) -> str | None:
    """Why the check failed, as `pulse.uptime.check.CheckResult.reason` says it; None when it passed."""
    if row.success:
        return None
    if row.error:
        return row.error
    failed = [r["resolved"] for r in row.condition_results or [] if not r.get("success")]
    return "; ".join(failed) or None


INDEX = Operation(
    "A component's checks, newest slot first",
    CheckPage,
    query=(*pages.QUERY, SINCE, UNTIL),
    refusals=(400, 404),
    example={
        "checks": [
            {
                "at": "2026-12-07T14:41:30+00:00",
                "checked_at": "2026-12-07T14:41:30.412000+00:00",
                "outcome": "MAJOR_OUTAGE",
                "success": False,
                "response_time_ms": 84,
                "status_code": 500,
                "reason": "[STATUS_CODE] (500) == 200",
            }
        ],
        "next_cursor": "MjAyNi0xMi0wN1QxNDo0MTozMCswMDowMA",
    },
)
