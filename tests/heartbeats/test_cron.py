"""Heartbeat monitors on cron (`pulse.heartbeats.deadlines.Cron`): the claim moves the deadline to
the next match in the monitor's time zone, plus the grace; a job that runs as its cron runs it
never misses a deadline across a DST gap or overlap (Europe/Berlin, 2025: spring forward on
03-30 at 02:00, fall back on 10-26 at 03:00); a silent one misses one deadline per run expected.

Time travels through the ``now`` arguments: each step is what a ping, the loop's claim and the
worker's apply would do at that moment."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from pulse.components.status import MAJOR_OUTAGE, OPERATIONAL
from pulse.heartbeats import apply, due, ping
from pulse.models import Component
from tests.heartbeats.conftest import TOKEN, reasons, row

BERLIN = ZoneInfo("Europe/Berlin")
STEP = timedelta(minutes=5)


def berlin(*parts, fold=0):
    return datetime(*parts, tzinfo=BERLIN, fold=fold).astimezone(UTC)


def claim_and_apply(now):
    """What the loop and its worker do at ``now``; returns the deadlines missed that they sent."""
    sent = []
    for (component_id, missed), _ in due.claim(now):
        apply.apply(component_id, missed)
        sent += [missed] if missed else []
    return sent


def live(start, end, runs, duration):
    """Step from ``start`` to ``end``: the job pings ``duration`` after each of its ``runs``; the
    loop claims and the worker applies at every step. Returns the deadlines missed that were sent."""
    pings = sorted(run + duration for run in runs)
    sent, now = [], start
    while now <= end:
        while pings and pings[0] <= now:
            ping.record(TOKEN, "success", b"", pings.pop(0))
        sent += claim_and_apply(now)
        now += STEP
    return sent


def test_a_ping_moves_the_deadline_to_the_next_match_in_the_zone_plus_the_grace(monitor):
    component = monitor(cron="0 3 * * *", zone="Europe/Berlin", grace_s=3600)
    pinged = berlin(2025, 1, 10, 3, 5)
    ping.record(TOKEN, "success", b"", pinged)
    assert claim_and_apply(pinged) == []
    assert row(component).deadline_at == berlin(2025, 1, 11, 3, 0) + timedelta(hours=1)  # 03:00 UTC


# Debian's cron runs "30 2 * * *" at 03:00 CEST on the day 02:30 does not exist, and once on the
# day it exists twice.
GAP_RUNS = [berlin(2025, 3, 28, 2, 30), berlin(2025, 3, 29, 2, 30), berlin(2025, 3, 30, 3), berlin(2025, 3, 31, 2, 30)]
OVERLAP_RUNS = [berlin(2025, 10, 25, 2, 30), berlin(2025, 10, 26, 2, 30), berlin(2025, 10, 27, 2, 30)]


@pytest.mark.parametrize("runs", [GAP_RUNS, OVERLAP_RUNS], ids=["gap", "overlap"])
@pytest.mark.parametrize("duration", [timedelta(minutes=1), timedelta(minutes=50)], ids=["1m", "50m"])
def test_a_job_run_by_its_cron_across_a_dst_change_misses_no_deadline(monitor, runs, duration):
    # A 50-minute run that started at the overlap's first 02:30 pings at the second 02:20.
    component = monitor(cron="30 2 * * *", zone="Europe/Berlin", grace_s=3600)
    start, end = runs[0] - timedelta(minutes=30), runs[-1] + timedelta(hours=6)
    assert live(start, end, runs, duration) == []
    assert Component.get_by_id(component.id).status == OPERATIONAL and reasons() == []
    assert row(component).deadline_at == runs[-1] + timedelta(days=1, hours=1)


@pytest.mark.parametrize("runs", [GAP_RUNS, OVERLAP_RUNS], ids=["gap", "overlap"])
def test_a_job_that_skips_the_dst_days_run_misses_that_deadline_once(monitor, runs):
    monitor(cron="30 2 * * *", zone="Europe/Berlin", grace_s=600)
    skipped = runs[-2]
    start, end = runs[0] - timedelta(minutes=30), runs[-1] + timedelta(hours=6)
    assert live(start, end, [run for run in runs if run != skipped], timedelta(minutes=1)) == [
        skipped + timedelta(minutes=10)
    ]
    assert reasons() == [f"no ping by the deadline {(skipped + timedelta(minutes=10)).isoformat()}", "ping received"]


def test_a_silent_monitor_misses_one_deadline_per_run_expected_never_a_burst(monitor):
    component = monitor(cron="0 * * * *", zone="UTC", grace_s=300)
    pinged = datetime(2025, 1, 10, 0, 1, tzinfo=UTC)
    ping.record(TOKEN, "success", b"", pinged)
    claim_and_apply(pinged)
    # no worker for ten hours: one deadline missed, the latest, and the next run's deadline after it
    assert claim_and_apply(datetime(2025, 1, 10, 10, 30, tzinfo=UTC)) == [datetime(2025, 1, 10, 10, 5, tzinfo=UTC)]
    assert row(component).deadline_at == datetime(2025, 1, 10, 11, 5, tzinfo=UTC)
    assert Component.get_by_id(component.id).status == MAJOR_OUTAGE
    assert claim_and_apply(datetime(2025, 1, 10, 11, 4, tzinfo=UTC)) == []
    assert claim_and_apply(datetime(2025, 1, 10, 11, 5, tzinfo=UTC)) == [datetime(2025, 1, 10, 11, 5, tzinfo=UTC)]
    assert Component.get_by_id(component.id).consecutive_failures == 2
