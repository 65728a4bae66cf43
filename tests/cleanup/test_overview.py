"""`pulse status`'s uptime from rollups is the uptime the raw checks give, at any point of the
rollups' progress: before any, during a backfill, after late checks, across midnight; and so is the
time of the slots nobody checked (UNKNOWN), left out of uptime."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from pulse.cleanup import rollups
from pulse.db import db
from pulse.models import Component
from pulse.uptime import history as history_
from pulse.uptime.overview import overview
from tests.cleanup.conftest import DAY, HOUR, NOW, add_checks

OUTCOMES = ["OPERATIONAL"] * 6 + ["DEGRADED_PERFORMANCE", "MAJOR_OUTAGE", "MAJOR_OUTAGE", "UNKNOWN"]

# The same windows, from the raw checks alone.
RAW = """
WITH b AS (SELECT date_trunc('hour', %(now)s::timestamptz, 'UTC') - interval '23 hours' AS s24,
                  date_trunc('day', %(now)s::timestamptz, 'UTC') - interval '6 days' AS s7,
                  date_trunc('day', %(now)s::timestamptz, 'UTC') - interval '29 days' AS s30)
SELECT c.key,
       (floor(10000.0 * count(*) FILTER (WHERE up AND scheduled_at >= s24)
              / nullif(count(*) FILTER (WHERE known AND scheduled_at >= s24), 0)) / 100)::float8,
       (floor(10000.0 * count(*) FILTER (WHERE up AND scheduled_at >= s7)
              / nullif(count(*) FILTER (WHERE known AND scheduled_at >= s7), 0)) / 100)::float8,
       (floor(10000.0 * count(*) FILTER (WHERE up AND scheduled_at >= s30)
              / nullif(count(*) FILTER (WHERE known AND scheduled_at >= s30), 0)) / 100)::float8,
       count(*) FILTER (WHERE NOT known AND scheduled_at >= s24) * c.interval_seconds,
       count(*) FILTER (WHERE NOT known AND scheduled_at >= s7) * c.interval_seconds,
       count(*) FILTER (WHERE NOT known AND scheduled_at >= s30) * c.interval_seconds
FROM component c
LEFT JOIN (SELECT u.*, u.outcome IN ('OPERATIONAL', 'DEGRADED_PERFORMANCE') AS up, u.outcome <> 'UNKNOWN' AS known
           FROM uptime_check u, b WHERE u.scheduled_at >= b.s30) u ON u.component_id = c.id, b
GROUP BY c.key, c.interval_seconds ORDER BY c.key
"""


def raw(now):
    return [tuple(r) for r in db.execute_sql(RAW, {"now": now}).fetchall()]


def shown(now):
    windows = ("uptime_24h", "uptime_7d", "uptime_30d", "unknown_24h_s", "unknown_7d_s", "unknown_30d_s")
    return [(r["key"], *(r[window] for window in windows)) for r in overview(now=now)]


@pytest.fixture
def history(component):
    """Three components checked every 13, 29 and 60 minutes over 40 days up to 2 hours after
    NOW, 3 % of the checks recorded up to two days late, and a component never checked."""
    rng = random.Random(17)
    for key, every in (("api", 13), ("db", 29), ("www", 60)):
        made, slot, found = component(key), NOW - 40 * DAY, []
        while slot < NOW + 2 * HOUR:
            late = timedelta(seconds=rng.uniform(0.5, 30))
            if rng.random() < 0.03:
                late = timedelta(hours=rng.uniform(1, 48))
            found.append((slot, slot + late, rng.choice(OUTCOMES), rng.randint(5, 900)))
            slot += timedelta(minutes=every)
        add_checks(made.id, found)
    component("new")


def test_before_any_rollup_the_checks_are_read_raw(history):
    assert shown(NOW) == raw(NOW)


@pytest.mark.parametrize("offset", [timedelta(0), -11 * HOUR, -13 * HOUR - 37 * timedelta(minutes=1), 2 * HOUR])
def test_uptime_from_rollups_is_the_uptime_of_the_raw_checks(history, offset):
    now = NOW + offset  # 13:37, 02:37 (the day before's hours still raw), 00:00 (just after midnight), 15:37
    rollups.catch_up(rollups.UPTIME, now=now)
    assert shown(now) == raw(now)
    later = now + 6 * HOUR  # checks recorded since the last pass are read raw
    assert shown(later) == raw(later)


def test_at_every_step_of_a_backfill(history, monkeypatch):
    monkeypatch.setattr(rollups, "STEP", 20 * HOUR)
    steps = 0
    while not rollups.step(rollups.UPTIME, NOW, rollups.Progress()):
        assert shown(NOW) == raw(NOW)
        steps += 1
    assert steps > 40


def test_a_late_check_counts_as_soon_as_it_is_recorded(history):
    rollups.catch_up(rollups.UPTIME, now=NOW)
    api = Component.get(Component.key == "api")
    add_checks(api.id, [(NOW - 3 * DAY + timedelta(seconds=1), NOW + timedelta(minutes=1), "MAJOR_OUTAGE", 5)])
    later = NOW + timedelta(minutes=2)
    assert shown(later) == raw(later)  # read raw until the next pass
    rollups.catch_up(rollups.UPTIME, now=later + rollups.SETTLE)
    assert shown(later) == raw(later)  # and from its rollups after it


# One component's checks per UTC day, from the raw checks alone.
RAW_DAYS = """
SELECT date_trunc('day', u.scheduled_at, 'UTC')::date, count(*) FILTER (WHERE u.outcome <> 'UNKNOWN'),
       count(*) FILTER (WHERE u.outcome IN ('OPERATIONAL', 'DEGRADED_PERFORMANCE')),
       count(*) FILTER (WHERE u.outcome = 'UNKNOWN')
FROM uptime_check u WHERE u.component_id = %s GROUP BY 1
"""


@pytest.mark.parametrize("offset", [None, timedelta(0), -13 * HOUR - 37 * timedelta(minutes=1), 2 * HOUR])
def test_one_components_history_is_its_overview_and_its_raw_days(history, offset):
    now = NOW + (offset or timedelta(0))
    if offset is not None:  # None: before any rollup
        rollups.catch_up(rollups.UPTIME, now=now)
    for key in ("api", "db", "new"):
        made = Component.get(Component.key == key)
        found = history_.uptime(made.id, made.interval_seconds, now, days=90)
        [listed] = [r for r in overview(now=now) if r["key"] == key]
        windows = found["windows"]
        assert [windows[w]["uptime"] for w in ("24h", "7d", "30d")] == [
            listed[f"uptime_{w}"] for w in ("24h", "7d", "30d")
        ]
        assert [windows[w]["unknown_s"] for w in ("24h", "7d", "30d")] == [
            listed[f"unknown_{w}_s"] for w in ("24h", "7d", "30d")
        ]
        by_day = {
            day.isoformat(): (checks, up, unknown) for day, checks, up, unknown in db.execute_sql(RAW_DAYS, (made.id,))
        }
        assert len(found["days"]) == 90 and found["days"][-1]["date"] == now.date().isoformat()
        for day in found["days"]:
            checks, up, unknown = by_day.get(day["date"], (0, 0, 0))
            assert (day["checks"], day["uptime"], day["unknown_s"]) == (
                checks,
                history_.percent(up, checks),
                unknown * made.interval_seconds,
            )
        assert (
            windows["90d"]["checks"]
            == sum(day["checks"] for day in found["days"])
            == sum(c for c, _, _ in by_day.values())
        )
