"""RabbitMQ that does not answer: the command line says so in one line; workers and the scheduler
wait for it, one line per attempt, and start by themselves when it answers."""

from tests.support.cli import pulse
from tests.support.env import HOST, NAMESPACE
from tests.support.forward import Relay
from tests.support.target import closed_port
from tests.support.wait import wait_for
from tests.support.worker import SchedulerProcess, WorkerProcess


def test_a_command_says_in_one_line_that_rabbitmq_is_down(database):
    port = closed_port()
    result = pulse("demo", PULSE_BROKER_URL=f"amqp://guest:s3cret@127.0.0.1:{port}/")

    assert result.returncode == 1
    assert result.stderr.startswith(f"pulse: RabbitMQ unavailable at amqp://guest:***@127.0.0.1:{port}/ (")
    assert "is it running?" in result.stderr and len(result.stderr.splitlines()) == 1
    assert "Traceback" not in result.stdout + result.stderr and "s3cret" not in result.stdout + result.stderr


def test_workers_and_the_scheduler_wait_for_rabbitmq_then_start(database, rabbit):
    port = closed_port()
    env = {"PULSE_BROKER_URL": f"amqp://guest:guest@127.0.0.1:{port}/{NAMESPACE}"}
    worker, scheduler = WorkerProcess(env=env), SchedulerProcess(env=env)
    try:
        for process in (worker, scheduler):
            # (a worker's lines show once dramatiq reads them: after its --worker-fork-timeout, 30 s)
            wait_for(lambda p=process: p.output.count("RabbitMQ does not answer") >= 2, "two attempts", timeout=60)
        waits = [line for line in worker.output.splitlines() if "RabbitMQ does not answer" in line]
        assert "trying again in 1 s" in waits[0] and "trying again in 2 s" in waits[1]  # a growing interval
        assert f"amqp://guest:***@127.0.0.1:{port}/" in waits[0]

        with Relay(("127.0.0.1", port), (HOST, 5672)):  # RabbitMQ comes up
            worker.wait_ready(timeout=60)
            scheduler.wait_ready(timeout=60)
            # read before the relay closes: the connections it cuts are not what this test is about
            output = worker.output + scheduler.output
        at = output.find("Traceback")
        assert at < 0, output[max(0, at - 2000) : at + 4000]  # what printed it, for the one who reads the failure
    finally:
        worker.stop()
        scheduler.stop()
