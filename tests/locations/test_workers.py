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


def test_a_location_is_held_to_its_own_results(central, workers, make_component, target, rabbit):
    slot = (utcnow() + timedelta(hours=1)).replace(microsecond=0)
    component = make_component(target, locations=LOCATIONS, next_check_at=slot)
    forged = [
        ("eu", "location_results", ["us", [[component.id, slot.isoformat(), slot.isoformat(), "MAJOR_OUTAGE",
                                              "forged", 1, None, False]]]),
        ("eu", "check", [component.id, slot.isoformat()]),  # another actor
    ]  # fmt: skip
    connection = pika.BlockingConnection(parameters(rabbit))
    try:
        channel = connection.channel()
        for routing_key, actor, args in forged:
            message = dramatiq.Message(queue_name="uptime", actor_name=actor, args=tuple(args), kwargs={}, options={})
            channel.basic_publish(RESULTS, routing_key, message.encode(), pika.BasicProperties(delivery_mode=2))
    finally:
        connection.close()

    dead = wait_for(lambda: (n := admin.ready_counts(rabbit, [xq("uptime")])[xq("uptime")]) and n >= 2 and n, "both")
    assert dead == 2
    assert rows() == [] and UptimeCheck.select().count() == 0 and target.received == []
    said = "is not that location's results"
    warnings = wait_for(lambda: (found := [x for x in central.output.splitlines() if said in x]) and found, said)
    assert [json.loads(line)["level"] for line in warnings] == ["warning", "warning"]


def test_a_location_started_before_its_queue_exists_waits_for_it(workers, rabbit):
    key = wire.key(get_settings().locations_secret, "late")
    env = {"PULSE_LOCATION": "late", "PULSE_LOCATION_KEY": key}
    worker = WorkerProcess(threads=1, modules=("pulse.actors",), env=env)
    try:
        said = "uptime.late does not exist yet: `pulse locations add late` makes it"
        # (a worker's lines show once dramatiq reads them: after its --worker-fork-timeout, 30 s)
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
        threads=1, modules=("pulse.actors",), env={"PULSE_LOCATION": "never", "PULSE_LOCATION_KEY": key}
    )
    try:
        wait_for(lambda: "uptime.never does not exist yet" in worker.output, "the waiting line", timeout=60)
    finally:
        code = worker.stop()  # SIGTERM: the wait ends, the process exits
    assert code == 0
    assert "Traceback" not in worker.output
