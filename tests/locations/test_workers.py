"""Locations as they run: a central worker and a worker per location (``PULSE_LOCATION``), each
its own `dramatiq pulse.actors` process, over the real RabbitMQ."""

import json
from datetime import timedelta

import dramatiq
import pika
import pytest

from pulse.components.status import OPERATIONAL
from pulse.config import get_settings
from pulse.db import db
from pulse.locations import RESULTS, dispatch, wire
from pulse.models import UptimeCheck, utcnow
from pulse.rabbitmq import admin, channel, parameters, xq
from tests.support.wait import wait_for
from tests.support.worker import WorkerProcess

LOCATIONS = ["eu", "us", "asia"]


def location(workers, name):
    """A worker of location ``name``, its queue made first (as `pulse locations add` does)."""
    with channel(get_settings()) as ch:
        dispatch.declare(ch, name, get_settings().queue_type)
    key = wire.key(get_settings().locations_secret, name)
    return workers(threads=2, modules=("pulse.actors",), env={"PULSE_LOCATION": name, "PULSE_LOCATION_KEY": key})


@pytest.fixture
def central(workers):
    return workers(threads=2)


def rows():
    return db.execute_sql(
        "SELECT location, seen, response_time_ms FROM location_check ORDER BY scheduled_at, location"
    ).fetchall()


def test_each_location_checks_the_slot_and_the_central_worker_takes_the_verdict(
    central, workers, make_component, target
):
    for name in LOCATIONS:
        location(workers, name)
    slot = (utcnow() + timedelta(seconds=2)).replace(microsecond=0)
    component = make_component(target, locations=LOCATIONS, interval_seconds=3600, next_check_at=slot)

    [check] = wait_for(lambda: list(UptimeCheck.select()), "the slot's verdict", timeout=30)
    found = wait_for(lambda: len(rows()) == 3 and rows(), "every location's result")

    assert (check.component_id, check.scheduled_at, check.outcome) == (component.id, slot, OPERATIONAL)
    assert sorted(name for name, _, _ in found) == sorted(LOCATIONS)
    assert all(seen == OPERATIONAL and ms is not None for _, seen, ms in found)
    assert len(target.received) == 3  # one request from each location


def publish_as_location(settings, *messages):
    """Publish (routing key, dramatiq message fields) to the results exchange, as a location's worker does."""
    connection = pika.BlockingConnection(parameters(settings))
    try:
        channel = connection.channel()
        for routing_key, fields in messages:
            body = {"queue_name": "uptime", "kwargs": {}, "options": {}, "message_id": "x", "message_timestamp": 0}
            channel.basic_publish(
                RESULTS, routing_key, json.dumps(body | fields), pika.BasicProperties(delivery_mode=2)
            )
    finally:
        connection.close()


def test_a_location_is_held_to_its_own_results(central, workers, make_component, target, rabbit):
    slot = (utcnow() + timedelta(hours=1)).replace(microsecond=0)
    component = make_component(target, locations=LOCATIONS, next_check_at=slot)
    forged = [[component.id, slot.isoformat(), slot.isoformat(), "MAJOR_OUTAGE", "forged", 1, None, False]]
    nonce = wire.nonce()
    publish_as_location(
        rabbit,
        ("eu", {"actor_name": "location_results", "args": ["us", nonce, forged]}),  # as another location
        ("eu", {"actor_name": "check", "args": [component.id, slot.isoformat()]}),  # another actor
        ("eu", {"actor_name": "location_results", "args": ["eu", nonce, forged], "options": {"eta": 2**53}}),
    )

    said = "from location 'eu' dropped, not run"
    # Both lines, not the first alone: the second message may still be on its way.
    warnings = wait_for(lambda: len(seen := [x for x in central.output.splitlines() if said in x]) >= 2 and seen, said)
    assert [json.loads(line)["level"] for line in warnings] == ["warning", "warning"]
    assert "its results are not this location's" in warnings[0] and "not a message for location_results" in warnings[1]
    wait_for(lambda: admin.ready_counts(rabbit, ["uptime"])["uptime"] == 0, "the uptime queue empty")
    assert admin.ready_counts(rabbit, [xq("uptime")])[xq("uptime")] == 0  # dropped, not dead-lettered
    assert rows() == [] and UptimeCheck.select().count() == 0 and target.received == []  # its slot was not sent


def test_what_comes_through_an_exchange_without_a_gate_is_not_run(central, make_component, target, rabbit):
    slot = (utcnow() + timedelta(hours=1)).replace(microsecond=0)
    component = make_component(target, next_check_at=slot)
    with channel(rabbit) as ch:
        ch.exchange_declare("elsewhere", "fanout", auto_delete=True)
        ch.queue_bind("uptime", "elsewhere")
        check = dramatiq.Message("uptime", "check", (component.id, slot.isoformat()), {}, {})
        ch.basic_publish("elsewhere", "", check.encode())

    said = "A message through the exchange 'elsewhere', which has no gate, dropped, not run."
    [line] = wait_for(lambda: [x for x in central.output.splitlines() if said in x], said)
    assert json.loads(line)["level"] == "warning"
    assert admin.ready_counts(rabbit, [xq("uptime")])[xq("uptime")] == 0
    assert UptimeCheck.select().count() == 0 and target.received == []  # not run


def test_a_locations_options_are_not_taken(central, workers, make_component, target, rabbit):
    """A far-future eta would hold the message in the central worker (unacked, its prefetch taken)."""
    eu = location(workers, "eu")
    slot = (utcnow() + timedelta(seconds=2)).replace(microsecond=0)
    component = make_component(target, locations=["eu", "us"], interval_seconds=3600, next_check_at=slot)
    [(nonce,)] = wait_for(
        lambda: db.execute_sql("SELECT nonce::text FROM location_sent WHERE location = 'us'").fetchall(), "us's batch"
    )
    vote = [component.id, slot.isoformat(), slot.isoformat(), "OPERATIONAL", None, 5, 200, False]
    options = {"eta": 32503680000000, "max_retries": 10**9, "min_backoff": 1}

    publish_as_location(
        rabbit, ("us", {"actor_name": "location_results", "args": ["us", nonce, [vote]], "options": options})
    )

    [check] = wait_for(lambda: list(UptimeCheck.select()), "the verdict of eu and us", timeout=30)
    assert check.outcome == OPERATIONAL
    assert sorted(name for name, _, _ in rows()) == ["eu", "us"]
    assert "Traceback" not in central.output and "Traceback" not in eu.output


@pytest.fixture
def refusing(rabbit):
    """The location ``full``, its queue declared (as its user could once) to refuse every message;
    the queue deleted afterwards."""
    with channel(rabbit) as ch:
        ch.queue_declare("uptime.full", durable=True, arguments={"x-max-length": 0, "x-overflow": "reject-publish"})
    yield "full"
    with channel(rabbit) as ch:
        ch.queue_delete("uptime.full")


def test_a_location_whose_queue_refuses_its_batch_holds_up_no_one(central, workers, make_component, target, refusing):
    """The central worker's declare of the queue fails, and so would its publish; the other
    location and the check made here go on."""
    location(workers, "us")
    slot = (utcnow() + timedelta(seconds=2)).replace(microsecond=0)
    both = make_component(
        target, key="both", locations=[refusing, "us"], quorum=1, interval_seconds=3600, next_check_at=slot
    )
    here = make_component(target, key="here", interval_seconds=3600, next_check_at=slot)

    verdicts = wait_for(lambda: UptimeCheck.select().count() == 2 and list(UptimeCheck.select()), "both verdicts")

    assert sorted((c.component_id, c.outcome) for c in verdicts) == [(both.id, OPERATIONAL), (here.id, OPERATIONAL)]
    assert [(name, seen) for name, seen, _ in rows() if seen is not None] == [("us", OPERATIONAL)]  # full: absent
    said = "Location full: RabbitMQ refused its batch of 1 checks"
    [line] = wait_for(lambda: [x for x in central.output.splitlines() if said in x], said)
    assert json.loads(line)["level"] == "warning"
    assert "Traceback" not in central.output


# A worker process's lines show once dramatiq's main process reads them: once the process has
# booted, or after --worker-fork-timeout (30 s by default) when it has not, as a location waiting
# for its queue has not. A second here: the waiting line is what these tests look for.
SHOWN_AT_ONCE = ("--worker-fork-timeout", "1000")


def test_a_location_started_before_its_queue_exists_waits_for_it(workers, rabbit):
    key = wire.key(get_settings().locations_secret, "late")
    env = {"PULSE_LOCATION": "late", "PULSE_LOCATION_KEY": key}
    worker = WorkerProcess(*SHOWN_AT_ONCE, threads=1, modules=("pulse.actors",), env=env)
    try:
        said = "uptime.late does not exist yet: `pulse locations add late` makes it"
        wait_for(lambda: said in worker.output, "the line saying what it waits for", timeout=60)
        assert not worker.ready.is_set()
        with channel(rabbit) as ch:
            dispatch.declare(ch, "late", rabbit.queue_type)
        worker.wait_ready()
        wait_for(lambda: consumers(rabbit, "uptime.late") == 1, "its consumer")
    finally:
        worker.stop()
    assert "Traceback" not in worker.output


def consumers(settings, queue):
    with channel(settings) as ch:
        return ch.queue_declare(queue, passive=True).method.consumer_count


def test_a_location_waiting_for_its_queue_stops_when_told(rabbit):
    key = wire.key(get_settings().locations_secret, "never")
    worker = WorkerProcess(
        *SHOWN_AT_ONCE, threads=1, modules=("pulse.actors",), env={"PULSE_LOCATION": "never", "PULSE_LOCATION_KEY": key}
    )
    try:
        wait_for(lambda: "uptime.never does not exist yet" in worker.output, "the waiting line", timeout=60)
    finally:
        code = worker.stop()  # SIGTERM: the wait ends, the process exits
    assert code == 0
    assert "Traceback" not in worker.output
