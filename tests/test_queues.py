"""Queue types (PULSE_QUEUE_TYPE), urgent twins, several broker nodes and `pulse queues migrate`,
on the real RabbitMQ: each test in a vhost of its own."""

import dataclasses
import json
from urllib.parse import quote, urlsplit

import pytest

from pulse import rabbitmq
from pulse.app.workers import build_broker
from pulse.config import Settings
from pulse.models import FailedMessage
from pulse.rabbitmq import PRIORITY_URGENT, admin, queues
from tests.support import actors
from tests.support.cli import pulse
from tests.support.models import Attempt
from tests.support.wait import wait_for
from tests.support.worker import SchedulerProcess, WorkerProcess


@pytest.fixture
def vhost(settings, database, request):
    """Settings for a vhost of this test's own, made empty: vhost(queue_type) -> (settings, env).
    Deleted at the end: each quorum queue is a Raft group with files of its own, and hundreds of
    them left over wedged a RabbitMQ 3.10 node limited to 1,024 file descriptors (its file handle
    cache stopped granting handles: no connection was accepted any more)."""
    name = f"{settings.vhost}_{request.node.name[:40]}"
    url = urlsplit(settings.broker_url)._replace(path="/" + quote(name, safe="")).geturl()
    own = dataclasses.replace(settings, broker_url=url)
    admin.recreate_vhost(own)

    def of(queue_type: str) -> tuple[Settings, dict[str, str]]:
        env = {"PULSE_BROKER_URL": own.broker_url, "PULSE_QUEUE_TYPE": queue_type}
        return dataclasses.replace(own, queue_type=queue_type), env

    yield of
    admin.delete_vhost(own)


def types(settings):
    return {name: q["type"] for name, q in admin.management_queues(settings).items()}


def send(settings, message, delay=None):
    broker = build_broker(settings)
    try:
        return broker.enqueue(message, delay=delay)
    finally:
        broker.close()


def urgent(message):
    return message.copy(options={"broker_priority": PRIORITY_URGENT})


def test_quorum_workers_declare_every_queue_and_its_urgent_twin_as_quorum_queues(vhost, workers):
    quorum, env = vhost("quorum")
    workers("--queues", "cleanup", env=env)

    declared = wait_for(lambda: (found := types(quorum)) and len(found) == 36 and found, "36 queues")
    assert declared == {name: "quorum" for name in queues.every_queue("quorum")}
    listed = admin.management_queues(quorum)
    assert listed["notifications"]["arguments"] == {
        "x-queue-type": "quorum",
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": "notifications.XQ",
        "x-dead-letter-strategy": "at-least-once",
        "x-overflow": "reject-publish",
    }
    # `-Q cleanup` consumes cleanup and its urgent twin (each with its .DQ), nothing else.
    expected = {"cleanup", "cleanup.DQ", "cleanup.urgent", "cleanup.urgent.DQ"}

    def consumed():  # the management API samples every few seconds
        return {n for n, q in admin.management_queues(quorum).items() if q.get("consumers")} == expected

    wait_for(consumed, "consumers on cleanup and its urgent twin only", every=0.5)


def test_an_urgent_message_overtakes_a_backlog_of_routine_ones_in_quorum_queues(vhost, workers):
    quorum, env = vhost("quorum")
    queues.declare(quorum)
    broker = build_broker(quorum)
    try:
        for i in range(300):
            broker.enqueue(actors.noop.message(f"routine-{i}"))
        broker.enqueue(urgent(actors.noop.message("urgent")))
    finally:
        broker.close()
    assert admin.ready_counts(quorum, ["cleanup", "cleanup.urgent"]) == {"cleanup": 300, "cleanup.urgent": 1}

    workers(threads=1, env=env)
    wait_for(lambda: Attempt.count("urgent"), "the urgent message")
    done = Attempt.select().where(Attempt.key.startswith("routine-")).count()
    assert done < 100, f"{done} routine messages ran before the urgent one"  # prefetched ones at most, not 300


def test_quorum_queues_dead_letter_into_their_xq(vhost, workers):
    quorum, env = vhost("quorum")
    workers(env=env)
    routine = send(quorum, actors.always_permanent.message("r"))
    pressing = send(quorum, urgent(actors.always_permanent.message("u")))

    wait_for(
        lambda: (
            admin.ready_counts(quorum, ["cleanup.XQ", "cleanup.urgent.XQ"]) == {"cleanup.XQ": 1, "cleanup.urgent.XQ": 1}
        ),
        "a message in each .XQ",
    )
    rows = {row.message_id: row.queue_name for row in FailedMessage.select()}
    assert rows == {routine.message_id: "cleanup", pressing.message_id: "cleanup.urgent"}


def test_a_queue_of_another_type_stops_workers_and_scheduler_with_the_way_to_migrate(vhost):
    classic, _ = vhost("classic")
    queues.declare(classic)
    _, env = vhost("quorum")

    worker = WorkerProcess(processes=2, env=env)
    assert worker.process.wait(60) == 2
    errors = [json.loads(line) for line in worker.lines if line.startswith("{") and '"level": "error"' in line]
    assert errors and all("pulse queues migrate" in e["msg"] for e in errors), worker.output
    assert "queue 'uptime' exists in RabbitMQ with other arguments than PULSE_QUEUE_TYPE=quorum" in errors[0]["msg"]
    assert "Traceback" not in worker.output

    scheduler = SchedulerProcess(env=env)
    assert scheduler.process.wait(60) == 1
    assert scheduler.output.strip().splitlines()[-1].startswith("pulse: queue 'uptime' exists in RabbitMQ")
    assert "Traceback" not in scheduler.output
    assert set(types(classic).values()) == {"classic"}  # nothing was changed


def test_migrate_moves_every_queue_to_the_other_type_with_its_messages(vhost, workers):
    classic, classic_env = vhost("classic")
    quorum, quorum_env = vhost("quorum")
    queues.declare(classic)
    for key in ("a", "b", "c"):
        send(classic, actors.noop.message(key))
    send(classic, actors.noop.message("delayed"), delay=1000)
    send(classic, urgent(actors.noop.message("pressing")).copy(queue_name="notifications"))
    send(classic, actors.noop.message("dead").copy(queue_name="oncall"))
    with rabbitmq.channel(classic) as ch:  # a dead letter, as RabbitMQ moves one
        ch.basic_publish("", "oncall.XQ", actors.noop.message("in the xq").copy(queue_name="oncall").encode())

    migrated = pulse("queues", "migrate", "--yes", **quorum_env)
    assert migrated.returncode == 0, migrated.stderr
    assert "cleanup: migrated, 3 message(s) moved" in migrated.stdout
    assert migrated.stdout.strip().splitlines()[-1] == "every queue is quorum: 18 migrated, 7 message(s) moved"
    assert types(quorum) == {name: "quorum" for name in queues.every_queue("quorum")}
    counts = admin.ready_counts(quorum, ["cleanup", "cleanup.DQ", "notifications", "oncall", "oncall.XQ"])
    assert counts == {"cleanup": 3, "cleanup.DQ": 1, "notifications": 1, "oncall": 1, "oncall.XQ": 1}
    again = pulse("queues", "migrate", "--yes", **quorum_env)
    assert again.stdout.strip() == "every queue is quorum: 0 migrated, 0 message(s) moved"

    worker = workers(env=quorum_env)
    refused = pulse("queues", "migrate", "--yes", **quorum_env)
    assert refused.returncode == 2
    assert "stop every worker and the scheduler first" in refused.stderr
    wait_for(lambda: all(Attempt.count(k) for k in ("a", "b", "c", "delayed", "pressing", "dead")), "every message")
    worker.stop()

    # Back to classic: the urgent twins' messages go home, their queue names with them.
    send(quorum, urgent(actors.noop.message("urgent-later")), delay=1000)
    send(quorum, urgent(actors.noop.message("urgent-now")))
    assert admin.ready_counts(quorum, ["cleanup.urgent", "cleanup.urgent.DQ"]) == {
        "cleanup.urgent": 1,
        "cleanup.urgent.DQ": 1,
    }
    back = pulse("queues", "migrate", "--yes", **classic_env)
    assert back.returncode == 0, back.stderr
    assert "cleanup.urgent: migrated, 1 message(s) moved" in back.stdout
    assert types(classic) == {name: "classic" for name in queues.every_queue("classic")}
    workers(env=classic_env)
    wait_for(lambda: Attempt.count("urgent-now") and Attempt.count("urgent-later"), "the urgent messages, at home")
    assert not any(name.startswith("cleanup.urgent") for name in types(classic))


def test_a_node_that_does_not_answer_is_passed_over(vhost, workers):
    classic, env = vhost("classic")
    down = urlsplit(classic.broker_url)._replace(netloc="guest:guest@127.0.0.1:1").geturl()
    env = {**env, "PULSE_BROKER_URL": f"{down},{classic.broker_url}"}
    workers(env=env)
    send(dataclasses.replace(classic, broker_url=env["PULSE_BROKER_URL"]), actors.noop.message("through the second"))

    wait_for(lambda: Attempt.count("through the second"), "the message")
    listed = pulse("queues", "--json", **env)
    assert listed.returncode == 0, listed.stderr
    assert {row["queue"]: row["type"] for row in json.loads(listed.stdout)["queues"]}["uptime"] == "classic"
