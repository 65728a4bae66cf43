"""When a heartbeat monitor expects its job, and when it is overdue: pure, no database.

A monitor expects a run of its job either a period after each ping (`Period`), or at each match of
a cron expression in its time zone after it (`Cron`). Counted from the last success or failure
ping, the runs expected form a chain (the first after the ping, each next after the one before),
and each run has its *deadline*: the run plus the grace. A job that pinged ``/start`` must also
send a success or a failure within the grace: its start plus the grace is a deadline too, until
that ping clears the start. A monitor is overdue at its earliest deadline (`first`); the claim of
the ``heartbeat-monitors`` loop (`pulse.heartbeats.due`) takes the latest deadline missed by now
(`missed`: one per claim, so a long silence is never a burst) and moves the monitor on to its next
one after now (`following`).

Cron expressions are read and evaluated by cronsim (https://pypi.org/project/cronsim/), the
library healthchecks.io wrote for this very job and keeps releasing (2.9 on PyPI as this is
written; Pulse is tested with 2.7 and 2.9): one small module without dependencies, typed, and
faithful to Debian's cron, which it names as its reference (a difference is a bug), DST
transitions included. In a monitor's local time, a job due at a time a DST gap skips runs right
after the gap, and one due at a time an overlap repeats runs once, so the run expected is the run
the job's own cron makes, and neither fires a false alert. Hand-written cron maths would have to
relearn all of that.
"""

from __future__ import annotations

import dataclasses
import functools
import zoneinfo
from datetime import UTC, datetime, timedelta

from cronsim import CronSim, CronSimError

FIELDS = 5  # minute, hour, day of month, month, day of week: as crontab has them (no seconds field)
MAX_CRON = 100  # characters


@dataclasses.dataclass(frozen=True)
class Period:
    """A run expected every ``period`` after the last ping."""

    period: timedelta

    def next(self, base: datetime, after: datetime) -> datetime:
        """The first run of the chain from the ping at ``base`` strictly after ``after``."""
        runs = max(0, (after - base) // self.period) + 1
        return base + runs * self.period

    def latest(self, base: datetime, until: datetime) -> datetime | None:
        """The last run of the chain from the ping at ``base`` at or before ``until``, or None."""
        runs = (until - base) // self.period
        return base + runs * self.period if runs >= 1 else None


@dataclasses.dataclass(frozen=True)
class Cron:
    """A run expected at each match of a five-field cron ``expression`` in the IANA time zone
    ``zone`` (UTC by default). `cron` and `time_zone` check them first."""

    expression: str
    zone: str = "UTC"

    def next(self, base: datetime, after: datetime) -> datetime:
        """The first match strictly after both ``base`` (the ping) and ``after``, in UTC."""
        start = max(base, after)
        # In an overlap cronsim reads a local time as its first occurrence: a match it gives may
        # be the one before ``start``, which is then passed.
        for run in CronSim(self.expression, start.astimezone(self._zone())):
            if run > start:
                return run.astimezone(UTC)
        raise AssertionError("unreachable: cron() refuses an expression without a match")  # pragma: no cover

    def latest(self, base: datetime, until: datetime) -> datetime | None:
        """The last match after ``base`` and at or before ``until``, in UTC, or None."""
        whole = until.replace(microsecond=0) + timedelta(seconds=1)  # matches fall on whole seconds
        earlier = CronSim(self.expression, whole.astimezone(self._zone()), reverse=True)
        run = next((run for run in earlier if run <= until), None)
        if run is None:  # no match in the 50 years before
            return None
        while (later := self.next(run, run)) <= until:  # an overlap's second occurrence, read as its first
            run = later
        return run.astimezone(UTC) if run > base else None

    def _zone(self) -> zoneinfo.ZoneInfo:
        return zoneinfo.ZoneInfo(self.zone)


Runs = Period | Cron


def runs(period_seconds: int | None, cron: str | None, time_zone: str) -> Runs:
    """A monitor's runs from its row (`pulse.models.HeartbeatMonitor`): a period or a cron expression."""
    if cron is not None:
        return Cron(cron, time_zone)
    assert period_seconds is not None, "a monitor has a period or a cron expression (the table checks it)"
    return Period(timedelta(seconds=period_seconds))


def first(runs: Runs, grace: timedelta, last_ping: datetime | None, last_start: datetime | None) -> datetime | None:
    """The earliest deadline of a monitor pinged last at ``last_ping`` and, if its job is running,
    started at ``last_start``: when it is (or was) overdue. None before any ping."""
    deadlines = [runs.next(last_ping, last_ping) + grace] if last_ping else []
    deadlines += [last_start + grace] if last_start else []
    return min(deadlines, default=None)


def missed(
    runs: Runs,
    grace: timedelta,
    last_ping: datetime | None,
    last_start: datetime | None,
    now: datetime,
    since: datetime | None,
) -> datetime | None:
    """The latest deadline passed by ``now``, not before ``since`` (the deadline the monitor was
    waiting for; None for none): one for all the runs missed in between. None when none passed."""
    deadlines = []
    if last_ping:
        run = runs.latest(last_ping, now - grace)
        deadlines += [run + grace] if run else []
    deadlines += [last_start + grace] if last_start else []
    return max((d for d in deadlines if d <= now and (since is None or d >= since)), default=None)


def following(
    runs: Runs, grace: timedelta, last_ping: datetime | None, last_start: datetime | None, now: datetime
) -> datetime | None:
    """The first deadline after ``now``: of the next run expected, or of the job started if it is
    later than now. None when there is none (no ping yet, and no start waiting)."""
    deadlines = [runs.next(last_ping, now - grace) + grace] if last_ping else []
    deadlines += [last_start + grace] if last_start and last_start + grace > now else []
    return min(deadlines, default=None)


def cron(value: str) -> str:
    """A five-field cron expression (minute, hour, day of month, month, day of week) with a match
    to come; raises ValueError naming what is wrong."""
    value = " ".join(value.split())
    if len(value) > MAX_CRON:
        raise ValueError(f"a cron expression is at most {MAX_CRON} characters")
    fields = len(value.split())
    if fields != FIELDS:
        raise ValueError(
            f"{value!r} has {fields} field{'' if fields == 1 else 's'}; a cron expression has 5: minute, hour, "
            "day of month, month and day of week"
        )
    try:
        next(CronSim(value, datetime.now(UTC)))
    except CronSimError as e:
        raise ValueError(f"{value!r} is not a valid cron expression: {str(e).lower()}") from None
    except StopIteration:
        raise ValueError(f"{value!r} never matches (no time in the next 50 years)") from None
    return value


def time_zone(value: str) -> str:
    """An IANA time zone name (``Europe/Berlin``, ``UTC``); raises ValueError otherwise."""
    if value not in _zones():
        raise ValueError(f"{value!r} is not an IANA time zone name (such as Europe/Berlin or UTC)")
    return value


@functools.cache
def _zones() -> frozenset[str]:
    # The host's zone files may add "localtime" (whatever the host's zone is), which is no IANA name.
    return frozenset(zoneinfo.available_timezones()) - {"localtime", "Factory"}
