"""The slots nobody checked, recorded as unknown (`pulse.uptime.missed`): on each component's grid,
once past their time, never twice, never a status changed or an incident opened; a check that
comes later still replaces its slot's unknown row."""

from datetime import UTC, datetime, timedelta

from actors.uptime import check
from pulse.models import Component, Event, Incident, UptimeCheck
from pulse.uptime import due, missed

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TIMEOUT = timedelta(seconds=2)  # make_component's


def slot(n, interval=30):
    return T0 + timedelta(seconds=n * interval)


def after(last):
    """A sweep's time at which ``last`` is the latest slot past its time."""
    return last + TIMEOUT + missed.MARGIN + timedelta(seconds=1)


def outcomes(component):
    rows = UptimeCheck.select().where(UptimeCheck.component == component.id).order_by(UptimeCheck.scheduled_at)
    return {row.scheduled_at: row.outcome for row in rows}


def test_the_slots_without_a_check_are_recorded_unknown_and_change_nothing(make_component, target):
    component = make_component(target, checking_since=T0)
    for n in (0, 1, 2, 6):
        check.fn(component.id, slot(n).isoformat())
    before = Component.get_by_id(component.id)
    events = Event.select().count()

    assert missed.sweep(after(slot(6))) == 3
    assert missed.sweep(after(slot(6))) == 0  # once

    assert outcomes(component) == {slot(n): "UNKNOWN" if 3 <= n <= 5 else "OPERATIONAL" for n in range(7)}
    unknown = UptimeCheck.get(UptimeCheck.scheduled_at == slot(4))
    assert (unknown.success, unknown.response_time_ms, unknown.error) == (False, None, missed.REASON)
    now = Component.get_by_id(component.id)
    assert (now.status, now.consecutive_failures, now.consecutive_successes, now.last_checked_at) == (
        before.status, before.consecutive_failures, before.consecutive_successes, slot(6),
    )  # fmt: skip
    assert (Event.select().count(), Incident.select().count()) == (events, 0)


def test_a_check_that_comes_after_all_replaces_the_unknown_row(make_component, target):
    component = make_component(target, checking_since=T0)
    check.fn(component.id, slot(0).isoformat())
    missed.sweep(after(slot(3)))
    assert outcomes(component) == {slot(0): "OPERATIONAL", **{slot(n): "UNKNOWN" for n in (1, 2, 3)}}

    check.fn(component.id, slot(3).isoformat())  # the latest: applied
    check.fn(component.id, slot(2).isoformat())  # older than the latest applied: kept, changes nothing

    assert outcomes(component) == {
        slot(0): "OPERATIONAL",
        slot(1): "UNKNOWN",
        **{slot(n): "OPERATIONAL" for n in (2, 3)},
    }
    replaced = UptimeCheck.get(UptimeCheck.scheduled_at == slot(3))
    assert (replaced.success, replaced.error, replaced.status_code) == (True, None, 200)
    assert Component.get_by_id(component.id).last_checked_at == slot(3)
    assert len(target.received) == 3


def test_hours_missed_are_caught_up_in_steps_on_each_grid_from_its_start(make_component, target):
    hourly = make_component(target, key="a", checking_since=T0, interval_seconds=60)
    later = make_component(target, key="b", checking_since=T0 + timedelta(hours=2), interval_seconds=600)
    make_component(target, key="paused", checking_since=T0, paused=True)
    make_component(target, key="new", checking_since=None)  # no first slot yet

    assert missed.sweep(after(T0)) == 1  # the first sweep: a's first slot
    assert missed.sweep(after(T0 + timedelta(hours=3))) == 180 + 7  # a's next 180 minutes, b's 7 slots since its start

    assert len(outcomes(hourly)) == 181 and set(outcomes(hourly).values()) == {"UNKNOWN"}
    assert sorted(outcomes(later)) == [T0 + timedelta(hours=2, minutes=10 * n) for n in range(7)]
    assert UptimeCheck.select().count() == 188  # none for the paused component, nor the new one


def test_a_sweep_out_of_time_leaves_the_rest_to_the_next(make_component, target, monkeypatch):
    component = make_component(target, checking_since=T0, interval_seconds=60)
    missed.sweep(after(T0))
    monkeypatch.setattr(missed, "BUDGET_S", 0)
    assert missed.sweep(after(T0 + timedelta(hours=1))) == 0
    monkeypatch.undo()
    assert missed.sweep(after(T0 + timedelta(hours=1))) == 60
    assert len(outcomes(component)) == 61


def test_a_grid_keeps_its_first_slot(make_component, target):
    component = make_component(target, next_check_at=None)
    due.start_new(T0)
    given = Component.get_by_id(component.id)
    assert given.checking_since == given.next_check_at and T0 <= given.next_check_at <= T0 + timedelta(seconds=30)
