"""Pausing a queue (`pulse queues pause`): its consumers take nothing more, hand back what they
had not taken and finish what they hold; resuming starts them again. Against the real RabbitMQ and
PostgreSQL."""

import json

import dramatiq

from pulse import pause
from pulse.app.workers import build_broker
from pulse.rabbitmq import admin
from tests.support import actors
from tests.support.cli import pulse
from tests.support.models import Attempt
from tests.support.wait import wait_for


def ready(settings, queue):
    return admin.ready_counts(settings, [queue])[queue]


def test_a_paused_consumer_hands_back_what_it_has_not_taken_and_acks_what_it_holds(rabbit, monkeypatch):
    broker = build_broker(rabbit)
    try:
        for i in range(5):
            broker.enqueue(dramatiq.Message(queue_name="cleanup", actor_name="noop", args=(i,), kwargs={}, options={}))
        consumer = broker.consume("cleanup", prefetch=5, timeout=100)
        held = wait_for(lambda: next(consumer), "the first message")
        wait_for(lambda: ready(rabbit, "cleanup") == 0, "all five sent to the consumer")

        monkeypatch.setattr(pause, "paused", frozenset({"cleanup"}))
        assert next(consumer) is None
        assert wait_for(lambda: ready(rabbit, "cleanup") == 4, "the four not taken back in the queue")
        consumer.ack(held)  # a message in flight finishes while paused
        assert next(consumer) is None and next(consumer) is None

        monkeypatch.setattr(pause, "paused", frozenset())
        again = [wait_for(lambda: next(consumer), "a message after the resume") for _ in range(4)]
        assert sorted(m.args[0] for m in again) == [1, 2, 3, 4]
        for message in again:
            consumer.ack(message)
        next(consumer)  # sends the acks
        consumer.close()
        assert ready(rabbit, "cleanup") == 0  # the one held was acked, not handed back: none runs twice
    finally:
        broker.close()


def test_pausing_a_queue_stops_its_workers_until_it_resumes(workers, settings):
    worker = workers("--queues", "cleanup", "notifications", threads=2)

    paused = pulse("queues", "pause", "cleanup")
    assert (paused.returncode, paused.stdout) == (0, "cleanup: paused; workers stop taking its messages within 2 s\n")
    assert pulse("queues", "pause", "cleanup").stdout.startswith("cleanup: was paused already")
    wait_for(lambda: "cleanup paused: this process takes none of its messages" in worker.output, "the pause")
    for i in range(3):
        actors.noop.send(f"c{i}")
    actors.broker.enqueue(actors.noop.message("n").copy(queue_name="notifications"))
    wait_for(lambda: Attempt.count("n"), "the message on the queue not paused")
    assert ready(settings, "cleanup") == 3 and Attempt.select().count() == 1

    listed = json.loads(pulse("queues", "--json").stdout)["queues"]
    assert {row["queue"]: row["paused"] for row in listed} == {
        "uptime": False,
        "metrics": False,
        "notifications": False,
        "oncall": False,
        "cleanup": True,
        "calculated-metrics": False,
    }
    health = wait_for(lambda: _workers_probe("paused: cleanup"), "the paused queue in the health output")
    assert health["ok"] and health["detail"].startswith("1 process(es) beating, 0 of 2 thread(s) busy")

    resumed = pulse("queues", "resume", "cleanup")
    assert (resumed.returncode, resumed.stdout) == (0, "cleanup: resumed; workers take its messages again within 2 s\n")
    wait_for(lambda: all(Attempt.count(f"c{i}") == 1 for i in range(3)), "the three paused messages processed")
    assert "cleanup resumed: this process takes its messages again." in worker.output
    assert pulse("queues", "resume", "cleanup").stdout.startswith("cleanup: was not paused")

    worker.stop()
    gone = pulse("health", "--worker")
    assert gone.returncode == 1
    assert "workers    FAIL no worker process beats here" in gone.stdout


def _workers_probe(expected):
    report = json.loads(pulse("health", "--worker", "--json").stdout)
    probe = next(check for check in report["checks"] if check["name"] == "workers")
    return probe if expected in probe["detail"] else None


def test_only_pulses_queues_can_be_paused(database):
    unknown = pulse("queues", "pause", "nope")
    assert unknown.returncode == 2
    assert unknown.stderr == (
        "pulse: no queue 'nope': Pulse's queues are "
        "uptime, metrics, notifications, oncall, cleanup, calculated-metrics\n"
    )
