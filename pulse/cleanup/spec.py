"""An organization's ``retention`` in the configuration file: how long each kind of history is
kept before the daily cleanup deletes it (`pulse.cleanup.retention`).

    retention: {uptime_checks: 90d, metric_points: 30d, extracted_points: 7d, calculated_points: 7d,
                notifications: 90d, events: 90d, oncall_alerts: 90d, rollups: 396d}

Only what the file sets is stored (seconds, in ``organization.retention``); a rule it leaves out
follows the default. Incidents are kept for good.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationInfo, field_validator

from pulse.spec import Strict, parse_duration

DAY = timedelta(days=1)
DEFAULTS: dict[str, timedelta] = {
    "uptime_checks": 90 * DAY,
    "metric_points": 30 * DAY,
    "extracted_points": 7 * DAY,
    "calculated_points": 7 * DAY,
    "notifications": 90 * DAY,  # deliveries that are over: sent, failed or cancelled
    "events": 90 * DAY,  # once sent, and no delivery or on-call alert of theirs is left
    "oncall_alerts": 90 * DAY,  # after they are resolved, with their timelines
    "rollups": 396 * DAY,  # 13 months: a year ago, and the month around it
}
# Rollups hold the 30 days `pulse status` reads.
MINIMUM = {name: DAY for name in DEFAULTS} | {"rollups": 31 * DAY}
MAXIMUM = 3650 * DAY

Retention = Annotated[timedelta, BeforeValidator(parse_duration)]


class RetentionSpec(Strict):
    uptime_checks: Retention | None = None
    metric_points: Retention | None = None
    extracted_points: Retention | None = None
    calculated_points: Retention | None = None
    notifications: Retention | None = None
    events: Retention | None = None
    oncall_alerts: Retention | None = None
    rollups: Retention | None = None

    @field_validator("*")
    @classmethod
    def _within(cls, value: timedelta | None, info: ValidationInfo) -> timedelta | None:
        low = MINIMUM[str(info.field_name)]
        if value is not None and not low <= value <= MAXIMUM:
            raise ValueError(f"must be between {days(low)} and {days(MAXIMUM)}, not {days(value)}")
        return value

    def stored(self) -> dict[str, int]:
        """What ``organization.retention`` holds: the rules the file sets, in seconds."""
        return {name: int(value.total_seconds()) for name, value in self if value is not None}


def effective(stored: dict[str, Any] | None) -> dict[str, timedelta]:
    """Every rule's retention for an organization whose ``retention`` column holds ``stored``."""
    stored = stored or {}
    return {name: timedelta(seconds=stored[name]) if name in stored else default for name, default in DEFAULTS.items()}


def seconds_sql(rule: str, organization: str = "g") -> str:
    """SQL: the retention of ``rule`` in seconds for the organization row ``organization``."""
    return f"coalesce(({organization}.retention ->> '{rule}')::bigint, {int(DEFAULTS[rule].total_seconds())})"


def days(value: timedelta) -> str:
    """``90d``, ``1.5d``."""
    return f"{value.total_seconds() / 86400:g}d"
