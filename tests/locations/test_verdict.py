"""The central side of locations, with the StubBroker: slots sent to each location, results
recorded per location, the verdict taken once per slot."""

import dataclasses
from datetime import timedelta

import pytest

from pulse.components.status import MAJOR_OUTAGE, OPERATIONAL
from pulse.config import get_settings
from pulse.db import db
from pulse.errors import PermanentError
from pulse.locations import dispatch, here, verdict, wire
from pulse.locations import gauges as location_gauges  # noqa: F401 - registers the gauges FromDatabase reads
from pulse.locations.allowance import allowance
from pulse.models import Component, Event, Incident, UptimeCheck, utcnow
from pulse.telemetry.gauges import FromDatabase
from pulse.uptime import batch
from pulse.uptime.overview import overview

LOCATIONS = ["eu", "us", "asia"]


@pytest.fixture
def located(make_component, target, broker):
    """A component checked from eu, us and asia, down after one failing verdict."""
    return make_component(target, locations=LOCATIONS, failure_threshold=1, success_threshold=1, timeout_ms=2000)


def slot_now():
    return utcnow().replace(microsecond=0)


def batches(broker):
    """The batches sent to each location's queue, opened: location -> [batch]."""
    found = {}
    for message, _ in broker.enqueued:
        if message.queue_name.startswith("uptime."):
            location = message.queue_name.removeprefix("uptime.")
            key = wire.key(get_settings().locations_secret, location)
            found.setdefault(location, []).append(wire.unseal(message.args[0], key))
    return found


def sent(broker):
    """The checks sent to each location's queue: location -> checks."""
    return {location: [c for b in found for c in b.checks] for location, found in batches(broker).items()}


def answer(broker, location, *results):
    """``location`` sends ``results``, naming the batch that sent it the first one's slot."""
    [nonce] = [
        b.nonce
        for b in batches(broker).get(location, [])
        if any((c.component_id, c.slot) == (results[0].component_id, results[0].slot) for c in b.checks)
    ] or [wire.nonce()]  # a slot never sent to it
    verdict.record_results(location, nonce, list(results))


def result(component, slot, seen, *, abstained=False, ms=20):
    reason = None if seen == OPERATIONAL else "connection refused"
    return wire.Result(component.id, slot, slot, seen, reason, ms, 200 if seen == OPERATIONAL else None, abstained)


def location_rows(component):
    rows = db.execute_sql(
        "SELECT location, seen, abstained, reason FROM location_check WHERE component_id = %s ORDER BY location",
        (component.id,),
    ).fetchall()
    return {location: (seen, abstained, reason) for location, seen, abstained, reason in rows}


def waiting():
    return db.execute_sql("SELECT component_id, scheduled_at FROM location_slot").fetchall()


def test_a_slot_goes_once_to_each_location_sealed_and_is_not_checked_here(located, target, broker):
    slot = slot_now()
    batch.check_all([(located.id, slot)], dispatch.send)

    batches = sent(broker)
    assert sorted(batches) == sorted(LOCATIONS)
    for checks in batches.values():
        [check] = checks
        assert (check.component_id, check.slot, check.kind, check.stored.url) == (located.id, slot, "http", located.url)
    assert target.received == []  # not checked by the central workers
    assert UptimeCheck.select().count() == 0
    [(component_id, waiting_slot)] = waiting()
    assert (component_id, waiting_slot) == (located.id, slot)
    assert all(located.url not in message.args[0] for message, _ in broker.enqueued)


def test_a_location_checks_what_it_is_sent_and_its_result_counts(located, target, broker):
    slot = slot_now()
    batch.check_all([(located.id, slot)], dispatch.send)
    key = wire.key(get_settings().locations_secret, "eu")
    eu = dataclasses.replace(get_settings(), location="eu", location_key=key)
    [message] = [m for m, _ in broker.enqueued if m.queue_name == "uptime.eu"]

    nonce, [found] = here.check(message.args[0], eu)

    assert (found.component_id, found.slot, found.seen, found.status_code) == (located.id, slot, OPERATIONAL, 200)
    assert len(target.received) == 1
    verdict.record_results("eu", nonce, [found])
    assert location_rows(located) == {"eu": (OPERATIONAL, False, None)}


def test_two_locations_up_decide_at_once_and_the_third_is_recorded_when_it_comes(located, broker):
    slot = slot_now()
    batch.check_all([(located.id, slot)], dispatch.send)

    answer(broker, "eu", result(located, slot, OPERATIONAL))
    assert UptimeCheck.select().count() == 0  # one vote of the two needed
    answer(broker, "us", result(located, slot, OPERATIONAL, ms=40))
    [check] = UptimeCheck.select()
    assert (check.scheduled_at, check.outcome, check.success, check.response_time_ms) == (slot, OPERATIONAL, True, 30)
    assert waiting()  # asia has not answered: the sweep will record it absent

    answer(broker, "asia", result(located, slot, MAJOR_OUTAGE))
    assert UptimeCheck.select().count() == 1  # the verdict was taken once
    assert location_rows(located)["asia"] == (MAJOR_OUTAGE, False, "connection refused")
    assert Component.get_by_id(located.id).status == OPERATIONAL
    assert waiting() == []


def test_one_location_failing_changes_nothing(located, broker):
    slot = slot_now()
    batch.check_all([(located.id, slot)], dispatch.send)
    for location, seen in (("eu", MAJOR_OUTAGE), ("us", OPERATIONAL), ("asia", OPERATIONAL)):
        answer(broker, location, result(located, slot, seen))

    assert Component.get_by_id(located.id).status == OPERATIONAL
    assert Incident.select().count() == 0
    assert location_rows(located)["eu"] == (MAJOR_OUTAGE, False, "connection refused")  # visible in the history


def test_two_locations_failing_make_one_outage_and_one_incident(located, broker):
    slot = slot_now()
    batch.check_all([(located.id, slot)], dispatch.send)
    answer(broker, "eu", result(located, slot, MAJOR_OUTAGE))
    answer(broker, "us", result(located, slot, MAJOR_OUTAGE))
    answer(broker, "us", result(located, slot, MAJOR_OUTAGE))  # redelivered
    answer(broker, "asia", result(located, slot, OPERATIONAL))

    [check] = UptimeCheck.select()
    assert check.outcome == MAJOR_OUTAGE
    assert check.error == ("failing from 2 of 3 locations (eu: connection refused; us: connection refused)")
    assert Component.get_by_id(located.id).status == MAJOR_OUTAGE
    assert Incident.select().count() == 1
    assert Event.select().where(Event.type == "component.status_changed").count() == 1


def test_abstaining_locations_do_not_vote(located, broker):
    slot = slot_now()
    batch.check_all([(located.id, slot)], dispatch.send)
    answer(broker, "eu", result(located, slot, MAJOR_OUTAGE, abstained=True))
    answer(broker, "us", result(located, slot, MAJOR_OUTAGE, abstained=True))
    answer(broker, "asia", result(located, slot, MAJOR_OUTAGE))

    assert UptimeCheck.select().count() == 0  # one vote: no verdict
    assert Component.get_by_id(located.id).status == OPERATIONAL
    assert location_rows(located)["eu"] == (MAJOR_OUTAGE, True, "connection refused")


def test_when_the_slots_time_is_up_the_silent_locations_are_recorded_absent(located, broker):
    slot = slot_now()
    batch.check_all([(located.id, slot)], dispatch.send)
    answer(broker, "eu", result(located, slot, MAJOR_OUTAGE))
    by = slot + dispatch.GRACE + timedelta(seconds=2)  # its timeout (2 s) and the grace

    with db.atomic():
        assert verdict.claim(by - timedelta(milliseconds=1)) == []
        [(key, due)] = verdict.claim(by)
    assert (key, due) == ((located.id, slot), by)
    verdict.decide([key])

    absent = (None, False, verdict.ABSENT)
    assert location_rows(located) == {"asia": absent, "eu": (MAJOR_OUTAGE, False, "connection refused"), "us": absent}
    assert UptimeCheck.select().count() == 0  # one vote of the two needed: no verdict
    assert Component.get_by_id(located.id).status == OPERATIONAL

    answer(broker, "us", result(located, slot, MAJOR_OUTAGE))  # late: the slot waits for it no more
    assert location_rows(located)["us"] == absent
    assert UptimeCheck.select().count() == 0


def test_a_verdict_decided_early_is_not_taken_again_when_the_time_is_up(located, broker):
    slot = slot_now()
    batch.check_all([(located.id, slot)], dispatch.send)
    answer(broker, "eu", result(located, slot, MAJOR_OUTAGE))
    answer(broker, "us", result(located, slot, MAJOR_OUTAGE))

    with db.atomic():
        [(key, _)] = verdict.claim(slot + timedelta(minutes=1))
    verdict.decide([key])

    assert UptimeCheck.select().count() == 1
    assert Incident.select().count() == 1
    assert location_rows(located)["asia"] == (None, False, verdict.ABSENT)


def test_a_location_not_listed_is_not_counted(located, broker):
    slot = slot_now()
    batch.check_all([(located.id, slot)], dispatch.send)
    answer(broker, "mars", result(located, slot, MAJOR_OUTAGE))
    answer(broker, "eu", result(located, slot, MAJOR_OUTAGE))

    assert sorted(location_rows(located)) == ["eu"]
    assert UptimeCheck.select().count() == 0


def test_without_the_secret_the_slots_are_not_sent_and_the_checks_made_here_are_recorded(
    located, make_component, target, broker, monkeypatch
):
    here_only = make_component(target, key="web")
    monkeypatch.setattr(dispatch, "get_settings", lambda: dataclasses.replace(get_settings(), locations_secret=""))
    slot = slot_now()

    with pytest.raises(PermanentError, match="PULSE_LOCATIONS_SECRET is not set"):
        batch.check_all([(located.id, slot), (here_only.id, slot)], dispatch.send)

    assert [c.component_id for c in UptimeCheck.select()] == [here_only.id]
    assert waiting() == [] and sent(broker) == {}


def test_pulse_status_shows_each_locations_latest_answer_and_latency(located, broker):
    first = slot_now()
    for slot, ms in ((first, 10), (first + timedelta(seconds=1), 25)):
        batch.check_all([(located.id, slot)], dispatch.send)
        answer(broker, "eu", result(located, slot, OPERATIONAL, ms=ms))
    answer(broker, "us", result(located, first, MAJOR_OUTAGE, ms=900))

    [row] = overview()
    assert sorted(row["locations"]) == ["eu", "us"]  # asia has not answered yet
    assert (row["locations"]["eu"]["response_time_ms"], row["locations"]["eu"]["seen"]) == (25, OPERATIONAL)
    assert row["locations"]["us"] | {"scheduled_at": None} == {
        "scheduled_at": None,
        "seen": MAJOR_OUTAGE,
        "abstained": False,
        "response_time_ms": 900,
        "reason": "connection refused",
    }


def test_the_gauges_tell_a_silent_location_and_one_that_abstains(located, broker, settings):
    slot = slot_now()
    batch.check_all([(located.id, slot)], dispatch.send)
    answer(broker, "eu", result(located, slot, OPERATIONAL))
    answer(broker, "us", result(located, slot, MAJOR_OUTAGE, abstained=True))

    def gauges():
        found = {family.name: family for family in FromDatabase(settings).collect()}
        return {
            name: {s.labels["location"]: s.value for s in found[name].samples}
            for name in ("location_silent", "location_abstaining", "location_last_result_timestamp_seconds")
        }

    now = gauges()
    assert now["location_silent"] == {"eu": 0, "us": 0, "asia": 1}  # asia never answered
    assert now["location_abstaining"] == {"eu": 0, "us": 1, "asia": 0}
    assert sorted(now["location_last_result_timestamp_seconds"]) == ["eu", "us"]

    later_slot = slot + timedelta(seconds=1)
    batch.check_all([(located.id, later_slot)], dispatch.send)
    answer(broker, "us", result(located, later_slot, OPERATIONAL))
    db.execute_sql("UPDATE location SET last_result_at = last_result_at - interval '61 seconds' WHERE name = 'eu'")
    later = gauges()
    assert later["location_abstaining"]["us"] == 0
    assert later["location_silent"]["eu"] == 1  # its component's interval (30 s) and the grace (30 s) went by


def test_a_result_counts_only_for_a_slot_its_batch_sent_it(located, broker, monkeypatch):
    unsent = []
    monkeypatch.setattr(allowance(), "unsent", lambda location, n: unsent.append((location, n)))
    slot = slot_now()
    batch.check_all([(located.id, slot)], dispatch.send)
    [eu_batch] = batches(broker)["eu"]
    [us_batch] = batches(broker)["us"]
    ahead = [slot + timedelta(seconds=30 * n) for n in (1, 2880)] + [slot.replace(year=2999)]

    verdict.record_results("eu", eu_batch.nonce, [result(located, s, MAJOR_OUTAGE) for s in ahead])  # never sent
    verdict.record_results("eu", us_batch.nonce, [result(located, slot, MAJOR_OUTAGE)])  # us's batch
    verdict.record_results("eu", wire.nonce(), [result(located, slot, MAJOR_OUTAGE)])  # no batch
    assert location_rows(located) == {}
    db.execute_sql("DELETE FROM location WHERE name = 'eu'")  # not heard of yet: nothing it sent counted

    verdict.record_results("eu", eu_batch.nonce, [result(located, slot, OPERATIONAL)])  # its honest result
    verdict.record_results("eu", eu_batch.nonce, [result(located, slot, MAJOR_OUTAGE)])  # and another

    assert location_rows(located) == {"eu": (OPERATIONAL, False, None)}  # the first that counts
    assert unsent == [("eu", 3), ("eu", 1), ("eu", 1), ("eu", 0), ("eu", 1)]
    assert db.execute_sql("SELECT name FROM location").fetchall() == [("eu",)]


def test_the_record_of_what_was_sent_goes_with_the_slot(located, broker):
    slot = slot_now()
    batch.check_all([(located.id, slot)], dispatch.send)
    sent_rows = "SELECT location FROM location_sent ORDER BY location"
    assert [name for (name,) in db.execute_sql(sent_rows).fetchall()] == sorted(LOCATIONS)

    with db.atomic():
        [(key, _)] = verdict.claim(slot + timedelta(minutes=1))
    verdict.decide([key])

    assert db.execute_sql(sent_rows).fetchall() == []
