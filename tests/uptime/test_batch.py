"""Checks sent together (`actors.uptime.checks`): their requests at once, their results in one
transaction, each slot recorded once however often the batch is delivered."""

import time
from datetime import UTC, datetime, timedelta

import pytest

from actors.uptime import checks
from pulse.db import db
from pulse.errors import PermanentError
from pulse.models import Component, UptimeCheck
from tests.conftest import HEALTHY
from tests.support.target import Answer

SLOT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC).isoformat()
SLOW_S = 1.0


def batch(components, slot=SLOT):
    return [[c.id, slot] for c in components]


def test_a_batch_requests_at_once_and_records_in_one_transaction(make_component, target):
    target.answer("/slow", Answer(body=HEALTHY, headers={"Content-Type": "application/json"}, delay_s=SLOW_S))
    target.answer("/down", Answer(status=503, body=b"down"))
    slow = [make_component(target, key=f"slow{i}", url=target.url("/slow")) for i in range(4)]
    down = make_component(target, key="down", url=target.url("/down"), failure_threshold=1)

    started = time.monotonic()
    checks.fn(batch([*slow, down]))
    took = time.monotonic() - started

    assert took < 3 * SLOW_S  # four slow requests at once, not one after another
    rows = list(UptimeCheck.select().order_by(UptimeCheck.component))
    assert [(r.component_id, r.success) for r in rows] == [(c.id, True) for c in slow] + [(down.id, False)]
    assert Component.get_by_id(down.id).status == "MAJOR_OUTAGE"  # the status rules, as for one check
    (transactions,) = db.execute_sql(
        "SELECT count(DISTINCT xmin::text) FROM uptime_check WHERE component_id <> %s", (down.id,)
    ).fetchone()
    assert transactions == 1  # one commit for the batch (the change took a savepoint of its own in it)


def test_a_redelivered_batch_checks_only_the_slots_not_recorded(make_component, target):
    first, second = make_component(target, key="first"), make_component(target, key="second")
    checks.fn(batch([first]))
    requests = len(target.received)

    checks.fn(batch([first, second]))  # the same slot of first, delivered again with another
    checks.fn(batch([first, second]))

    assert len(target.received) == requests + 1  # second's request only, once
    assert UptimeCheck.select().count() == 2


def test_a_component_gone_or_paused_is_skipped_and_the_rest_checked(make_component, target):
    kept = make_component(target, key="kept")
    paused = make_component(target, key="paused", paused=True)

    checks.fn([*batch([kept, paused]), [987654, SLOT]])

    assert [r.component_id for r in UptimeCheck.select()] == [kept.id]


@pytest.mark.parametrize(
    "bad, named",
    [
        ("not a list", "batch is not a list of [component_id, scheduled_at] pairs"),
        ([[1]], "batch is not a list of [component_id, scheduled_at] pairs"),
        ([["1", SLOT]], "batch is not a list of [component_id, scheduled_at] pairs"),
        ([[1, "yesterday"]], "scheduled_at 'yesterday' is not an ISO 8601 time"),
    ],
)
def test_a_malformed_batch_is_refused_whole_naming_what_is_wrong(make_component, target, bad, named):
    make_component(target)
    with pytest.raises(PermanentError, match=named.replace("[", r"\[").replace("]", r"\]")):
        checks.fn(bad)
    assert UptimeCheck.select().count() == 0 and target.received == []


def test_the_loop_sends_due_checks_in_batches_of_nearly_equal_size():
    from schedules.uptime import UPTIME

    due = datetime.now(UTC)
    rows = [(i, due + timedelta(milliseconds=i)) for i in range(2 * UPTIME.batch_max + 8)]

    sizes = [len(message.args[0]) for message in UPTIME.messages(rows)]

    assert len(sizes) == 3 and max(sizes) - min(sizes) <= 1 and sum(sizes) == len(rows)
    assert [m.actor_name for m in UPTIME.messages(rows[:1])] == ["checks"]


def test_a_batch_ahead_of_its_slots_starts_each_request_at_its_own_slot(make_component, target):
    components = [make_component(target, key=f"ahead{i}") for i in range(3)]
    now = datetime.now(UTC)
    slots = [now + timedelta(milliseconds=ms) for ms in (300, 150, 450)]  # not in slot order

    checks.fn([[c.id, slot.isoformat()] for c, slot in zip(components, slots, strict=True)])

    rows = {r.component_id: r for r in UptimeCheck.select()}
    for c, slot in zip(components, slots, strict=True):
        assert rows[c.id].scheduled_at == slot and rows[c.id].started_at >= slot  # never before its slot


def test_a_slot_far_ahead_of_the_workers_clock_holds_its_check_back_only_so_long(make_component, target, monkeypatch):
    monkeypatch.setattr("pulse.uptime.batch.AHEAD_MAX_S", 0.1)  # a worker whose clock runs an hour behind
    component = make_component(target, key="skewed")
    slot = datetime.now(UTC) + timedelta(hours=1)

    checks.fn([[component.id, slot.isoformat()]])

    [row] = UptimeCheck.select()
    assert row.scheduled_at == slot and row.started_at < slot
