"""Which checks are due (`pulse.uptime.due`): claims on each component's grid, every slot sent once and on time."""

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from pulse.db import db
from pulse.models import Component, UptimeCheck, utcnow
from pulse.uptime import due
from tests.support.wait import wait_for

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_claims_follow_each_components_grid_and_skip_missed_slots(make_component, target):
    on_time = make_component(target, key="on-time", interval_seconds=15, next_check_at=T0)
    behind = make_component(target, key="behind", interval_seconds=60, next_check_at=T0 - timedelta(seconds=150))
    make_component(target, key="later", next_check_at=T0 + timedelta(seconds=1))
    make_component(target, key="paused", paused=True, next_check_at=T0)
    make_component(target, key="new")

    claimed = dict(due.claim(T0 + timedelta(milliseconds=300)))

    assert claimed == {on_time.id: T0, behind.id: T0 - timedelta(seconds=30)}
    assert Component.get_by_id(on_time.id).next_check_at == T0 + timedelta(seconds=15)
    assert Component.get_by_id(behind.id).next_check_at == T0 + timedelta(seconds=30)  # on its grid, not now+60
    assert due.claim(T0 + timedelta(milliseconds=300)) == []
    assert due.start_new(T0) == 1
    assert T0 <= Component.get(Component.key == "new").next_check_at <= T0 + timedelta(seconds=30)


def test_two_schedulers_claiming_at_once_never_double_a_slot(make_component, target):
    for i in range(200):
        make_component(target, key=f"c{i}", interval_seconds=15, next_check_at=T0 - timedelta(seconds=i % 15))
    start = threading.Barrier(4)

    def claimer(_):
        start.wait()
        claimed = []
        try:
            for _ in range(5):
                with db.atomic():
                    claimed.extend(due.claim(T0, limit=17))
        finally:
            db.close()
        return claimed

    with ThreadPoolExecutor(4) as pool:
        claims = [c for claimed in pool.map(claimer, range(4)) for c in claimed]
    rest = due.claim(T0)

    assert len(claims + rest) == 200
    assert len(set(claims + rest)) == 200


def running(worker):
    return "uptime loop: running in this process." in worker.output


def test_of_two_workers_one_runs_the_loop_and_each_slot_is_sent_once_and_on_time(make_component, target, workers):
    pair = [workers(threads=1), workers(threads=1)]
    # The first slot is set once the workers are ready: a slow start (a loaded machine) must not make it late.
    start = utcnow() + timedelta(seconds=2)
    fast = make_component(target, key="fast", interval_seconds=15, next_check_at=start)
    make_component(target, key="daily", interval_seconds=86400, next_check_at=start + timedelta(hours=1))

    rows = wait_for(
        lambda: (found := list(UptimeCheck.select().order_by(UptimeCheck.scheduled_at))) and len(found) >= 2 and found,
        "two checks of the 15 s component",
        timeout=45,
    )

    assert [r.component_id for r in rows] == [fast.id, fast.id]
    assert [r.scheduled_at for r in rows] == [start, start + timedelta(seconds=15)]
    for row in rows:
        assert timedelta(0) <= row.started_at - row.scheduled_at < timedelta(seconds=1)
    assert len(target.received) == 2  # each slot was sent once
    assert [running(w) for w in pair].count(True) == 1


def test_a_worker_that_stops_hands_the_loop_on_and_no_slot_waits(make_component, target, workers):
    pair = [workers(threads=1), workers(threads=1)]
    first = wait_for(lambda: next((w for w in pair if running(w)), None), "a worker running the loop")
    [other] = [w for w in pair if w is not first]

    assert first.stop() == 0
    stopped = utcnow()
    after = make_component(target, key="after", interval_seconds=3600, next_check_at=stopped + timedelta(seconds=1.5))
    [row] = wait_for(lambda: list(UptimeCheck.select()), "the check after the stop", timeout=30)

    assert "uptime loop: stopped in this process" in first.output
    assert running(other)
    assert (row.component_id, row.scheduled_at) == (after.id, after.next_check_at)
    assert timedelta(0) <= row.started_at - row.scheduled_at < timedelta(seconds=1)
