"""``GET /api/v1/components/{key}/uptime``: a component's uptime (scope ``read``) over 24 hours,
7, 30 and 90 days, and with ``days`` (1 to 90) day by day, oldest first: each the share of its
checks that were up (truncated to 0.01; null without a check), how many checks, and the seconds
nobody checked it, as `pulse status` counts them (`pulse.uptime.history`)."""

from __future__ import annotations

from typing import Any

from pulse.api.auth import Call, error
from pulse.api.components import named
from pulse.models import utcnow
from pulse.uptime.history import MAX_DAYS, uptime


def show(call: Call) -> dict[str, Any]:
    text, days = call.query.get("days"), 0
    if text is not None:
        if not (text.isascii() and text.isdigit() and len(text) <= 3 and 1 <= int(text) <= MAX_DAYS):
            raise error(400, f"days must be a whole number from 1 to {MAX_DAYS}")
        days = int(text)
    found = named(call)
    now = utcnow()
    return {"key": found.key, "at": now.isoformat(), **uptime(found.id, found.interval_seconds or 0, now, days)}
