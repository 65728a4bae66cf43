"""Checks run and recorded (`pulse.uptime.record`): statuses, incidents, events, maintenance, late or racing results."""

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from actors.uptime import check
from pulse import events
from pulse.db import db
from pulse.models import (
    Component,
    Event,
    ExtractedValue,
    ExtractedValueDataPoint,
    Incident,
    IncidentUpdate,
    MaintenanceWindow,
    UptimeCheck,
    utcnow,
)
from pulse.models.event import INCIDENT_OPENED, INCIDENT_RESOLVED, STATUS_CHANGED
from pulse.net import AddressPolicy
from pulse.rabbitmq import admin
from pulse.uptime import record
from tests.conftest import HEALTHY

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def slot(n, interval=30):
    return T0 + timedelta(seconds=n * interval)


def run_check(component, n):
    check.fn(component.id, slot(n).isoformat())
    return Component.get_by_id(component.id)


def check_now(component):
    """Run a check of the component without recording it."""
    loaded = record.load(component.id, utcnow())
    return loaded.run(AddressPolicy())


def notifications_ready(settings):
    return admin.ready_counts(settings, ["notifications"])["notifications"]


def test_a_check_records_status_timing_conditions_and_extracted_values(make_component, target):
    component = make_component(target, extract={"db_latency": "[BODY].db.latency_ms"})

    after = run_check(component, 0)

    row = UptimeCheck.get()
    assert (row.scheduled_at, row.status_code, row.success, row.outcome, row.error) == (
        slot(0),
        200,
        True,
        "OPERATIONAL",
        None,
    )
    assert 0 <= row.response_time_ms < 2000
    assert [(r["condition"], r["success"]) for r in row.condition_results] == [
        ("[STATUS] == 200", True),
        ("[BODY].status == UP", True),
    ]
    assert [(p.value, p.scheduled_at) for p in ExtractedValueDataPoint.select()] == [(12.5, slot(0))]
    assert ExtractedValue.get().last_value == 12.5
    assert (after.status, after.last_checked_at, after.consecutive_successes) == ("OPERATIONAL", slot(0), 1)
    assert target.received[0].method == "GET" and target.received[0].path == "/health"


def test_a_redelivered_check_does_nothing_twice(make_component, target):
    component = make_component(target, failure_threshold=1)
    target.answer("/health", status=500)

    run_check(component, 0)
    run_check(component, 0)  # the same message again
    assert len(target.received) == 1  # the actor saw the slot recorded and did not check again
    result = check_now(component)
    assert record.record_locked(component.id, slot(0), result) == []  # nor would the recording apply twice

    assert UptimeCheck.select().count() == 1
    assert Incident.select().count() == 1 and Event.select().count() == 2


def test_a_sustained_outage_opens_one_incident_and_a_recovery_resolves_it(make_component, target, settings):
    component = make_component(target)
    target.answer("/health", status=503, body=b"maintenance")

    assert run_check(component, 0).status == "OPERATIONAL"
    assert run_check(component, 1).status == "OPERATIONAL"  # one blip pages no one
    assert Event.select().count() == 0
    down = run_check(component, 2)
    assert (down.status, down.consecutive_failures) == ("MAJOR_OUTAGE", 3)
    run_check(component, 3)

    [incident] = Incident.select()
    assert (incident.title, incident.impact, incident.automatic, incident.resolved_at) == (
        "Public API is down",
        "MAJOR_OUTAGE",
        True,
        None,
    )
    [opened] = IncidentUpdate.select()
    assert opened.status == "INVESTIGATING" and "[STATUS] (503) == 200" in opened.message
    changed, announced = Event.select().order_by(Event.id)
    assert (changed.type, changed.payload["from"], changed.payload["to"]) == (
        STATUS_CHANGED,
        "OPERATIONAL",
        "MAJOR_OUTAGE",
    )
    assert (announced.type, announced.incident_id) == (INCIDENT_OPENED, incident.id)
    assert all(e.sent_at is not None for e in (changed, announced))
    assert notifications_ready(settings) == 2  # broadcast(event_id), once each

    target.answer("/health", body=HEALTHY)
    assert run_check(component, 4).status == "MAJOR_OUTAGE"
    up = run_check(component, 5)
    assert (up.status, up.consecutive_successes) == ("OPERATIONAL", 2)
    incident = Incident.get_by_id(incident.id)
    assert (incident.status, incident.resolved_at is not None) == ("RESOLVED", True)
    assert [u.status for u in IncidentUpdate.select().order_by(IncidentUpdate.id)] == ["INVESTIGATING", "RESOLVED"]
    assert [e.type for e in Event.select().order_by(Event.id)][2:] == [STATUS_CHANGED, INCIDENT_RESOLVED]
    assert notifications_ready(settings) == 4


def test_only_slow_answers_degrade_without_an_incident(make_component, target):
    component = make_component(target, conditions=["[STATUS] == 200", "[RESPONSE_TIME] < 50"], failure_threshold=2)
    target.answer("/health", body=HEALTHY, delay_s=0.2)

    run_check(component, 0)
    assert run_check(component, 1).status == "DEGRADED_PERFORMANCE"
    assert Incident.select().count() == 0
    assert [e.payload["to"] for e in Event.select()] == ["DEGRADED_PERFORMANCE"]


def test_a_connection_failure_is_an_outage(make_component, target):
    component = make_component(target, url="http://127.0.0.1:9/health", failure_threshold=1)
    run_check(component, 0)
    row = UptimeCheck.get()
    assert (row.outcome, row.status_code, row.success) == ("MAJOR_OUTAGE", None, False)
    assert row.error == "connection refused by 127.0.0.1"


def test_a_cloud_metadata_address_is_refused(make_component, target):
    component = make_component(target, url="http://169.254.169.254/latest/meta-data/", failure_threshold=1)
    run_check(component, 0)
    assert "link-local/cloud-metadata address" in UptimeCheck.get().error


def test_maintenance_shows_under_maintenance_and_stays_silent(make_component, target):
    component = make_component(target, failure_threshold=1)
    now = utcnow()
    MaintenanceWindow.create(
        component=component, starts_at=now - timedelta(minutes=5), ends_at=now + timedelta(minutes=5)
    )
    target.answer("/health", status=500)

    assert run_check(component, 0).status == "UNDER_MAINTENANCE"
    assert run_check(component, 1).status == "UNDER_MAINTENANCE"
    assert UptimeCheck.select().count() == 2  # still checked
    assert Incident.select().count() == 0 and Event.select().count() == 0

    MaintenanceWindow.delete().execute()
    assert run_check(component, 2).status == "MAJOR_OUTAGE"
    assert Incident.select().count() == 1


def test_a_late_result_is_kept_but_changes_nothing(make_component, target):
    component = make_component(target, failure_threshold=1)
    run_check(component, 5)
    target.answer("/health", status=500)
    after = run_check(component, 4)  # an older slot finishing last
    assert (after.status, after.last_checked_at) == ("OPERATIONAL", slot(5))
    assert UptimeCheck.select().count() == 2


def test_two_checks_finishing_together_apply_the_change_once(make_component, target):
    component = make_component(target, failure_threshold=3)
    target.answer("/health", status=500)
    run_check(component, 0)
    run_check(component, 1)
    result = check_now(component)
    start = threading.Barrier(2)

    def finish(n):
        start.wait()
        try:
            return record.record_locked(component.id, slot(n), result)
        finally:
            db.close()

    with ThreadPoolExecutor(2) as pool:
        event_ids = [i for ids in pool.map(finish, (2, 3)) for i in ids]

    # Slot 3 may commit first, and then slot 2 is a late result: 4 failures, or 3.
    assert Component.get_by_id(component.id).consecutive_failures in (3, 4)
    assert UptimeCheck.select().count() == 4
    assert Incident.select().count() == 1
    assert sorted(Event.get_by_id(i).type for i in event_ids) == sorted([INCIDENT_OPENED, STATUS_CHANGED])


def test_the_outbox_loop_sends_what_a_writer_left_unsent(make_component, target, settings, caplog):
    component = make_component(target)
    old = utcnow() - timedelta(minutes=2)
    left = Event.create(
        organization=component.organization_id, component=component, type=STATUS_CHANGED, payload={}, created_at=old
    )
    fresh = Event.create(organization=component.organization_id, type=STATUS_CHANGED, payload={})

    with db.atomic():
        claimed = events.claim(utcnow())
    assert claimed == [(("broadcast", left.id, STATUS_CHANGED), old + events.GRACE)]
    assert Event.get_by_id(left.id).sent_at is not None
    assert Event.get_by_id(fresh.id).sent_at is None  # its own sender may still be at work
    assert "Sending 1 event(s) unsent for more than 30 s" in caplog.text
    assert events.next_due() == fresh.created_at + events.GRACE
    with db.atomic():
        assert events.claim(utcnow()) == []


def test_the_same_slot_checked_twice_at_once_counts_once(make_component, target):
    component = make_component(target)
    first, second = record.load(component.id, slot(0)), record.load(component.id, slot(0))
    result = first.run(AddressPolicy())

    assert record.record(first, slot(0), result) == []
    assert record.record(second, slot(0), result) == []  # its guard sees the first: nothing applied

    assert UptimeCheck.select().count() == 1
    assert Component.get_by_id(component.id).consecutive_successes == 1


def test_a_check_loaded_before_another_finished_still_counts(make_component, target):
    component = make_component(target)
    stale = record.load(component.id, slot(1))
    run_check(component, 0)  # another check applies meanwhile
    result = stale.run(AddressPolicy())

    record.record(stale, slot(1), result)  # its guard fails; the locked path applies it

    after = Component.get_by_id(component.id)
    assert (after.consecutive_successes, after.last_checked_at) == (2, slot(1))


def test_checks_saved_together_are_each_recorded_once_by_their_own_path(make_component, target):
    plain = make_component(target, key="plain")
    stale = make_component(target, key="stale")
    extracting = make_component(target, key="extracting", extract={"db_latency": "[BODY].db.latency_ms"})
    failing = make_component(target, key="failing", conditions=["[STATUS] == 500"], failure_threshold=1)
    slots = [(plain.id, slot(0)), (stale.id, slot(1)), (extracting.id, slot(0)), (failing.id, slot(0))]
    loaded = record.load_all(slots)
    run_check(stale, 0)  # another check of it applies meanwhile: its guard fails, the locked path counts it
    results = [c.run(AddressPolicy()) for c in loaded]
    batch = [(c, at, result) for c, (_, at), result in zip(loaded, slots, results, strict=True)]

    with db.atomic():
        written = record.record_all([*batch, batch[0]])  # the plain check twice, as a redelivery might

    assert {e.type for e in Event.select().where(Event.id.in_(written))} == {STATUS_CHANGED, INCIDENT_OPENED}
    rows = {(row.component_id, row.scheduled_at) for row in UptimeCheck.select()}
    assert rows == {(plain.id, slot(0)), (stale.id, slot(0)), (stale.id, slot(1)), (extracting.id, slot(0)),
                    (failing.id, slot(0))}  # fmt: skip
    after = {c.key: c for c in Component.select()}
    assert (after["plain"].consecutive_successes, after["plain"].last_checked_at) == (1, slot(0))
    assert (after["stale"].consecutive_successes, after["stale"].last_checked_at) == (2, slot(1))
    assert after["failing"].status == "MAJOR_OUTAGE"
    assert ExtractedValueDataPoint.select().count() == 1
    assert ExtractedValue.get().last_at == slot(0)
