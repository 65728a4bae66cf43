"""Real `dramatiq pulse.actors` worker processes on the real RabbitMQ and PostgreSQL."""

import itertools
import json

from click.testing import CliRunner

from pulse.cli import main
from pulse.models import FailedMessage
from pulse.rabbitmq import QUEUES, admin
from tests.support import actors
from tests.support.models import Attempt
from tests.support.wait import wait_for
from tests.support.worker import free_port, metric


def cli(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def dead_row(message):
    return FailedMessage.get_or_none(FailedMessage.message_id == message.message_id)


def test_a_worker_declares_every_queue_with_its_delay_and_dead_letter_queues(workers, settings):
    workers("--queues", "uptime")  # consumes one queue, declares all six

    queues = wait_for(
        lambda: (q := admin.management_queues(settings)) and all(f"{n}.XQ" in q for n in QUEUES) and q,
        "the queues in the management API",
    )
    for name in QUEUES:
        for declared in (name, f"{name}.DQ"):
            assert queues[declared]["arguments"]["x-max-priority"] == 1
            assert queues[declared]["arguments"]["x-dead-letter-routing-key"] == f"{name}.XQ"
        assert queues[f"{name}.XQ"]["arguments"]["x-message-ttl"] == 7 * 24 * 3600 * 1000


def test_failures_are_dead_lettered_counted_listed_and_requeued(workers, settings):
    port = free_port()
    workers(processes=2, env={"PULSE_METRICS_PORT": str(port)})
    permanent = actors.always_permanent.send("p")
    transient = actors.always_transient.send("t")
    once = actors.permanent_once.send("o")
    for i in range(6):
        actors.noop.send(f"n{i}")

    wait_for(lambda: dead_row(permanent) and dead_row(once), "the permanent failures")
    assert Attempt.count("p") == 1
    wait_for(lambda: dead_row(transient), "the transient failure after its retries", timeout=60)

    # 1 + 3 attempts, each retry waiting longer than the one before (1 s, 2 s, 4 s, with jitter).
    times = [a.at for a in Attempt.select().where(Attempt.key == "t").order_by(Attempt.number)]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    assert len(times) == 4
    assert [gap >= minimum for gap, minimum in zip(gaps, (1, 2, 4), strict=True)] == [True, True, True], gaps

    # In each queue's .XQ (the row is written just before the worker's consumer nacks), and in `pulse dlq list --json`.
    wait_for(lambda: admin.ready_counts(settings, ["cleanup.XQ"]) == {"cleanup.XQ": 3}, "3 messages in cleanup.XQ")
    listed = {row["message_id"]: row for row in json.loads(cli("dlq", "list", "--json").output)}
    assert set(listed) == {permanent.message_id, transient.message_id, once.message_id}
    assert listed[permanent.message_id]["attempts"] == 1
    assert listed[transient.message_id]["attempts"] == 4
    assert listed[transient.message_id]["error_type"] == "TransientError"
    shown = json.loads(cli("dlq", "show", str(listed[permanent.message_id]["id"]), "--json").output)
    assert shown["args"] == ["p"] and "PermanentError" in shown["traceback"]

    # Counted by the metrics of both worker processes together (just after each nack: wait).
    def dead(name):
        return metric(port, "worker_task_dlq_total", task_name=name)

    wait_for(lambda: dead("always_permanent") == 1 and dead("always_transient") == 1, "1 dlq each")
    assert metric(port, "worker_task_failure_total", task_name="always_transient", error_type="TransientError") == 4
    wait_for(lambda: Attempt.count("n5"), "the no-ops")
    assert wait_for(lambda: metric(port, "worker_task_success_total", task_name="noop") == 6, "6 successes")
    assert metric(port, "worker_queue_depth", queue_name="cleanup") == 0
    assert metric(port, "worker_dead_letters", queue_name="cleanup") == 3

    # Requeued: run again, out of the .XQ; a success leaves the list, a new failure comes back.
    result = cli("dlq", "requeue", once.message_id, permanent.message_id)
    assert result.output.strip() == "requeued 2 message(s)"
    wait_for(lambda: Attempt.count("o") == 2 and Attempt.count("p") == 2, "the requeued messages to run")
    wait_for(lambda: dead_row(permanent).requeued_at is None, "the requeued permanent failure to fail again")
    assert dead_row(once).requeued_at is not None and dead_row(once).requeue_count == 1
    again = cli("dlq", "requeue", once.message_id)  # a second requeue of the same message sends nothing
    assert again.output.strip().endswith("requeued 0 message(s)")
    assert "was already requeued" in again.output
    assert dead_row(permanent).requeue_count == 1
    listed = [row["message_id"] for row in json.loads(cli("dlq", "list", "--json").output)]
    assert sorted(listed) == sorted([permanent.message_id, transient.message_id])
    wait_for(lambda: admin.ready_counts(settings, ["cleanup.XQ"]) == {"cleanup.XQ": 2}, "2 messages in cleanup.XQ")
    wait_for(lambda: dead("always_permanent") == 2, "2 dlq")


def test_a_message_in_flight_when_its_worker_is_killed_is_redelivered(workers):
    first = workers(threads=1)
    message = actors.slow_first_time.send("slow")
    wait_for(lambda: Attempt.count("slow") == 1, "the first attempt to start")

    first.kill()  # SIGKILL, mid-message
    workers(threads=1)

    wait_for(lambda: Attempt.count("slow") == 2, "the redelivered message to run")
    attempts = list(Attempt.select().where(Attempt.key == "slow").order_by(Attempt.number))
    assert {a.message_id for a in attempts} == {message.message_id}
    assert attempts[0].pid != attempts[1].pid
    assert FailedMessage.select().count() == 0


def test_requeue_all_and_purge(workers, settings):
    workers()
    sent = [actors.always_permanent.send(f"x{i}") for i in range(3)]

    def xq_holds(count):  # a row is written just before its message is rejected to the .XQ
        return admin.ready_counts(settings, ["cleanup.XQ"]) == {"cleanup.XQ": count}

    wait_for(lambda: all(dead_row(m) for m in sent) and xq_holds(3), "three dead letters")

    assert cli("dlq", "requeue", "--all").output.strip() == "requeued 3 message(s)"
    wait_for(lambda: all(Attempt.count(f"x{i}") == 2 for i in range(3)), "the requeued messages to run")
    wait_for(lambda: all(dead_row(m).requeued_at is None for m in sent) and xq_holds(3), "them to fail again")

    result = cli("dlq", "purge", "--yes")
    assert result.output.strip() == "deleted 3 record(s), dropped 3 message(s) from the dead-letter queues"
    assert FailedMessage.select().count() == 0
    assert admin.ready_counts(settings, ["cleanup.XQ"]) == {"cleanup.XQ": 0}
