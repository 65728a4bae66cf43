"""``GET /api/v1/components/{key}/uptime``: a component's uptime (scope ``read``) over 24 hours,
7, 30 and 90 days, and with ``days`` (1 to 90) day by day, oldest first: each the share of its
checks that were up (truncated to 0.01; null without a check), how many checks, and the seconds
nobody checked it, as `pulse status` counts them (`pulse.uptime.history`)."""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict

from pulse.api.auth import Call
from pulse.api.components import named
from pulse.api.declared import Operation
from pulse.api.params import Whole
from pulse.models import utcnow
from pulse.uptime.history import MAX_DAYS, uptime

DAYS = Whole("days", "Also each of the last days UTC days, oldest first, today's included.", least=1, most=MAX_DAYS)


class Window(TypedDict):
    uptime: float | None
    checks: int
    unknown_s: int


class Day(Window):
    date: str


# "24h" is no identifier: the functional form
UptimeWindows = TypedDict("UptimeWindows", {"24h": Window, "7d": Window, "30d": Window, "90d": Window})


class UptimeView(TypedDict):
    key: str
    at: str
    windows: UptimeWindows
    days: NotRequired[list[Day]]


def show(call: Call) -> UptimeView:
    days = DAYS.read(call.query) or 0
    found = named(call)
    now = utcnow()
    counted = uptime(found.id, found.interval_seconds or 0, now, days)
    shown: UptimeView = {"key": found.key, "at": now.isoformat(), "windows": counted["windows"]}
    if "days" in counted:
        shown["days"] = counted["days"]
    return shown


WINDOW = {"uptime": 99.97, "checks": 20154, "unknown_s": 30}
SHOW = Operation(
    "A component's uptime over 24 hours, 7, 30 and 90 days, and day by day",
    UptimeView,
    query=(DAYS,),
    refusals=(400, 404),
    example={
        "key": "api",
        "at": "2026-12-07T14:42:03.113000+00:00",
        "windows": {"24h": WINDOW, "7d": WINDOW, "30d": WINDOW, "90d": WINDOW},
        "days": [{"date": "2026-12-07", **WINDOW}],
    },
)
