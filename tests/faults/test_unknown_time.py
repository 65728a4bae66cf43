"""Drill 22: the workers stopped for four intervals, the scheduler running: three slots go
unchecked (the workers, back, check the latest slot late, as after any stop).

The slots that passed while nothing checked are recorded as unknown by the next minute's sweep
(`pulse.uptime.missed`) once past their time: the component's grid has a row for every slot from
its first check to its last, checked or unknown; the unknown ones are those of the outage, and
`pulse status` shows their time in `unknown 24h` and its JSON, uptime staying 100 % (the checks
made all passed) with no status changed, no incident opened and no event written.
"""

import itertools
import json
import time
from datetime import timedelta

import pytest

from pulse.cli.status import span
from pulse.models import Component, Event, Incident, UptimeCheck, utcnow
from tests.support.cli import pulse
from tests.support.wait import wait_for

INTERVAL = 15  # seconds, the shortest a component may have


def checked():
    return UptimeCheck.select().where(UptimeCheck.outcome != "UNKNOWN")


def unknown_time():
    [row] = json.loads(pulse("status", "--json").stdout)
    return row["unknown_24h_s"]


@pytest.mark.minutes
def test_slots_missed_while_the_workers_were_down_show_as_unknown_time(make_component, target, workers, schedulers):
    component = make_component(target, interval_seconds=INTERVAL, timeout_ms=1000, failure_threshold=1)
    schedulers()
    worker = workers(threads=2)
    wait_for(lambda: checked().count() >= 2, "two checks", timeout=90)

    worker.stop()
    stopped = utcnow()
    time.sleep(4 * INTERVAL)  # the outage is time itself: the component's slots pass unchecked
    workers(threads=2)
    restarted = utcnow()
    wait_for(lambda: checked().where(UptimeCheck.scheduled_at > restarted).count() >= 1, "a check after", timeout=60)
    # A slot is past its time 61 s after it (its 1 s timeout and the sweep's margin); sweeps run each minute.
    wait_for(lambda: unknown_time() >= 3 * INTERVAL, "the outage shown as unknown time", timeout=180)

    rows = list(UptimeCheck.select().order_by(UptimeCheck.scheduled_at))
    slots = [row.scheduled_at for row in rows]
    assert all(b - a == timedelta(seconds=INTERVAL) for a, b in itertools.pairwise(slots)), slots  # no slot left out
    missed = [row.scheduled_at for row in rows if row.outcome == "UNKNOWN"]
    assert len(missed) >= 3 and all(stopped - timedelta(seconds=INTERVAL) < s <= restarted for s in missed), missed
    assert {row.outcome for row in rows if row.outcome != "UNKNOWN"} == {"OPERATIONAL"}

    [shown] = json.loads(pulse("status", "--json").stdout)
    assert shown["unknown_24h_s"] == shown["unknown_30d_s"] == len(missed) * INTERVAL
    assert shown["uptime_24h"] == 100.0  # the checks made: the unknown slots are left out
    table = pulse("status").stdout.splitlines()
    assert table[0].split()[-4:] == ["unknown", "24h", "open", "incident"]
    assert f" {span(len(missed) * INTERVAL)} " in table[1]

    after = Component.get_by_id(component.id)
    assert (after.status, after.consecutive_failures) == ("OPERATIONAL", 0)
    assert (Event.select().count(), Incident.select().count()) == (0, 0)
