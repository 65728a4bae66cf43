"""Orphans, with a real worker: a message held in the worker when its connection closes is not run
there, only once RabbitMQ delivers it again."""

import subprocess

from pulse.rabbitmq import admin
from tests.support import actors
from tests.support.models import Attempt
from tests.support.wait import wait_for


def test_a_message_held_when_the_connection_closes_runs_once_after_redelivery(settings, database, rabbit, workers):
    worker = workers(threads=1)  # its thread runs one message and it holds one more (a prefetch of 2)
    actors.two_steps.send("busy", 10.0)
    wait_for(lambda: Attempt.count("busy:start"), "the thread to be busy")
    held = actors.noop.send("held")
    wait_for(lambda: admin.ready_counts(settings, ["cleanup"]) == {"cleanup": 0}, "the worker to hold it")

    # Every connection of the vhost closed at once, as when a RabbitMQ node dies.
    subprocess.run(
        ["rabbitmqctl", "close_all_connections", "-p", settings.vhost, "a drill"], check=True, capture_output=True
    )
    wait_for(lambda: "was skipped" in worker.output, "the held copy skipped", timeout=20)
    wait_for(lambda: Attempt.count("held"), "the held message, delivered again")

    assert [a.message_id for a in Attempt.select().where(Attempt.key == "held")] == [held.message_id]
    assert Attempt.count("busy:start") == 2  # the message running then is run again: its effects must be guarded
    # The lost connection is one WARNING per consumer, saying what happens next; nothing louder.
    lost = [line for line in worker.lines if "RabbitMQ connection lost" in line]
    assert lost and all('"level": "warning"' in line and "reconnecting in 3 s" in line for line in lost)
    assert not [
        line
        for line in worker.lines
        if '"level": "error"' in line or '"level": "critical"' in line or "Traceback" in line
    ]
