"""Rollups: hourly and daily rows that hold exactly what their raw rows give, however often and
however late they are computed."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from pulse.cleanup import rollups
from pulse.db import db
from pulse.models import ComponentRollup, MetricRollup, Organization, RollupState
from tests.cleanup.conftest import DAY, HOUR, NOW, add_checks, add_points

MINUTE, SECOND = timedelta(minutes=1), timedelta(seconds=1)
YESTERDAY = NOW.replace(hour=0, minute=0, second=0, microsecond=0) - DAY
OUTCOMES = ["OPERATIONAL", "DEGRADED_PERFORMANCE", "MAJOR_OUTAGE"]

RAW_HOURS = """
SELECT component_id, date_trunc('hour', scheduled_at, 'UTC'), count(*),
       count(*) FILTER (WHERE outcome = 'OPERATIONAL'), count(*) FILTER (WHERE outcome = 'DEGRADED_PERFORMANCE'),
       count(*) FILTER (WHERE outcome = 'MAJOR_OUTAGE'), round(avg(response_time_ms)::numeric, 6),
       percentile_disc(0.95) WITHIN GROUP (ORDER BY response_time_ms), max(response_time_ms)
FROM uptime_check GROUP BY 1, 2 ORDER BY 1, 2
"""
ROLLED_HOURS = """
SELECT component_id, start, checks, operational, degraded, outage, round(avg_ms::numeric, 6), p95_ms, max_ms
FROM component_rollup WHERE period = %s ORDER BY 1, 2
"""
RAW_DAYS = RAW_HOURS.replace("'hour'", "'day'")


def checks(hours, every_minutes=7):
    """Checks every few minutes over ``hours`` (offsets from YESTERDAY), outcomes and times varied."""
    found = []
    for hour in hours:
        for i, minute in enumerate(range(0, 60, every_minutes)):
            slot = YESTERDAY + hour * HOUR + minute * MINUTE
            found.append((slot, slot + 2 * SECOND, OUTCOMES[(hour + i) % 3], 10 + (hour * 37 + i * 11) % 90))
    return found


def rows(query, *args):
    return db.execute_sql(query, args).fetchall()


def test_hours_and_days_hold_what_their_raw_checks_give(component):
    api, www = component("api"), component("www")
    add_checks(api.id, checks([0, 1, 23, 24, 25]))  # three hours yesterday, two today
    add_checks(www.id, checks([5]))
    progress = rollups.catch_up(rollups.UPTIME, now=NOW)
    assert progress.caught_up
    assert rows(ROLLED_HOURS, "hour") == rows(RAW_HOURS)
    # Yesterday is over: its day, with the p95 of its checks; today is not.
    yesterday = [r for r in rows(RAW_DAYS) if r[1] == YESTERDAY]
    assert rows(ROLLED_HOURS, "day") == yesterday
    assert ComponentRollup.select().where(ComponentRollup.p95_pending).count() == 0


def test_maintenance_counts_the_checks_scheduled_in_a_window(component):
    from pulse.models import MaintenanceWindow

    api = component()
    add_checks(api.id, checks([2]))  # at minutes 0, 7, ... 56
    MaintenanceWindow.create(component=api, starts_at=YESTERDAY + 2 * HOUR, ends_at=YESTERDAY + 2 * HOUR + 7 * MINUTE)
    rollups.catch_up(rollups.UPTIME, now=NOW)
    hour = ComponentRollup.get(ComponentRollup.period == "hour")
    assert (hour.checks, hour.maintenance) == (9, 1)  # 00, not 07 (the window's end)


def test_computing_again_gives_the_same_rows(component):
    api = component()
    add_checks(api.id, checks(range(30)))
    rollups.catch_up(rollups.UPTIME, now=NOW)
    first = rows(ROLLED_HOURS, "hour") + rows(ROLLED_HOURS, "day")
    RollupState.update(watermark=YESTERDAY).execute()  # as if the steps since had not run
    rollups.catch_up(rollups.UPTIME, now=NOW)
    assert rows(ROLLED_HOURS, "hour") + rows(ROLLED_HOURS, "day") == first


def test_a_late_check_goes_into_its_hour_and_its_day(component):
    api = component()
    add_checks(api.id, checks([3]))
    rollups.catch_up(rollups.UPTIME, now=NOW)
    before = ComponentRollup.get(ComponentRollup.period == "day").checks
    # Recorded a day and a half after its slot (a requeued dead letter, say).
    late = YESTERDAY + 3 * HOUR + 59 * MINUTE
    add_checks(api.id, [(late, NOW, "MAJOR_OUTAGE", 999)])
    rollups.catch_up(rollups.UPTIME, now=NOW + 5 * MINUTE)
    assert rows(ROLLED_HOURS, "hour") == rows(RAW_HOURS)
    day = ComponentRollup.get(ComponentRollup.period == "day")
    assert (day.checks, day.outage, day.p95_ms, day.max_ms, day.p95_pending) == (before + 1, 4, 999, 999, False)


def test_a_check_recorded_after_the_watermark_waits_for_the_next_pass(component):
    api = component()
    add_checks(api.id, [(NOW - 30 * SECOND, NOW - 20 * SECOND, "OPERATIONAL", 5)])
    rollups.catch_up(rollups.UPTIME, now=NOW)  # the watermark stays SETTLE behind now
    assert ComponentRollup.select().count() == 0
    rollups.catch_up(rollups.UPTIME, now=NOW + rollups.SETTLE)
    assert ComponentRollup.select().count() == 1


def test_a_check_past_its_organizations_retention_is_not_rolled_up(component):
    Organization.update(retention={"uptime_checks": 3 * 86400}).execute()
    api = component()
    old = YESTERDAY - 3 * DAY  # a late record of a slot whose hour cleanup may have thinned already
    add_checks(api.id, [(old, NOW - 5 * MINUTE, "OPERATIONAL", 5)])
    add_checks(api.id, checks([1]))
    rollups.catch_up(rollups.UPTIME, now=NOW)
    assert {r.start for r in ComponentRollup.select().where(ComponentRollup.period == "hour")} == {YESTERDAY + HOUR}


def test_a_pass_leaves_the_work_to_one_already_stepping(component, settings):
    add_checks(component().id, checks([1]))
    db.execute_sql("INSERT INTO rollup_state (kind, watermark) VALUES ('uptime', %s)", (YESTERDAY,))
    with psycopg.connect(settings.database_url) as other:
        other.execute("SELECT 1 FROM rollup_state WHERE kind = 'uptime' FOR UPDATE")
        assert rollups.catch_up(rollups.UPTIME, now=NOW).steps == 0
    assert rollups.catch_up(rollups.UPTIME, now=NOW).steps > 0


@pytest.mark.parametrize("step_hours", [1, 48])
def test_a_backfill_in_steps_gives_the_same_rows_as_one_pass(component, monkeypatch, step_hours):
    api = component()
    add_checks(api.id, checks(range(0, 36, 5)))
    monkeypatch.setattr(rollups, "STEP", step_hours * HOUR)
    while not rollups.catch_up(rollups.UPTIME, now=NOW, budget_s=0).caught_up:
        pass
    assert rows(ROLLED_HOURS, "hour") == rows(RAW_HOURS)
    assert rows(ROLLED_HOURS, "day") == [r for r in rows(RAW_DAYS) if r[1] == YESTERDAY]


def test_metric_rollups_count_the_polls_and_their_values(query):
    p95 = query()
    slot = YESTERDAY + 4 * HOUR
    values = [3.0, None, 8.5, -1.0, None]  # a poll with no data has no value
    add_points(p95.id, [(slot + i * 10 * MINUTE, slot + i * 10 * MINUTE, v) for i, v in enumerate(values)])
    rollups.catch_up(rollups.METRICS, now=NOW)
    hour = MetricRollup.get(MetricRollup.period == "hour")
    assert (hour.points, hour.count, hour.min, hour.max, hour.sum, hour.avg, hour.last) == (
        5,
        3,
        -1.0,
        8.5,
        10.5,
        3.5,
        -1.0,
    )
    assert hour.last_at == slot + 30 * MINUTE
    day = MetricRollup.get(MetricRollup.period == "day")
    assert (day.start, day.points, day.count, day.min, day.max, day.avg, day.last) == (
        YESTERDAY,
        5,
        3,
        -1.0,
        8.5,
        3.5,
        -1.0,
    )


def test_an_empty_table_is_caught_up(database):
    for kind in rollups.KINDS:
        assert rollups.catch_up(kind, now=NOW).caught_up
    assert rollups.watermarks() == {kind.name: None for kind in rollups.KINDS}
