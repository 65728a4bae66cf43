"""One leg of a loop at a time (`pulse.loop.Turn`): against the real PostgreSQL."""

import dataclasses
import logging
import threading
import time

import pytest

from pulse import loop
from pulse.db import db
from pulse.ticks import stopping


@pytest.fixture(autouse=True)
def running():
    """As in a worker that runs: an in-process worker stopped by an earlier test leaves it set."""
    stopping.clear()


def test_a_copy_of_a_running_leg_ends_and_the_next_leg_waits_its_turn(database):
    until = time.time() + loop.WAIT_S  # about to end: the next leg waits in its thread
    with loop.Turn("test", until) as first:
        started = time.monotonic()
        with loop.Turn("test", until + 0.5) as copy:  # a second scheduler's leg, sent a moment later
            pass
        waited = time.monotonic() - started
        taken = threading.Event()

        def next_leg():
            with loop.Turn("test", until + 60) as turn:  # the next minute's
                if turn.taken:
                    taken.set()

        later = threading.Thread(target=next_leg)
        later.start()
        assert not taken.wait(0.5)  # the next minute's leg waits for this one to end...
    later.join(10)

    assert first.taken and not copy.taken and waited >= loop.CONFIRM_S
    assert taken.is_set()  # ...and takes its turn when it does


def test_a_dead_legs_turn_passes_to_its_redelivered_copy(database):
    until = time.time() + 60
    dead = loop.Turn("test", until).__enter__()  # a leg whose worker is SIGKILLed: its session ends
    assert dead.taken
    db.execute_sql("SELECT pg_terminate_backend(%s)", (dead.conn.info.backend_pid,))

    with loop.Turn("test", until) as redelivered:
        assert redelivered.taken
    dead.__exit__(None, None, None)


def test_other_loops_do_not_wait(database):
    until = time.time() + 60
    with loop.Turn("uptime", until) as uptime, loop.Turn("metrics", until) as metrics:
        assert uptime.taken and metrics.taken


def test_without_postgresql_the_leg_runs_anyway(settings, monkeypatch, caplog):
    unreachable = dataclasses.replace(settings, database_url="postgresql://postgres@127.0.0.1:1/pulse")
    monkeypatch.setattr(loop, "get_settings", lambda: unreachable)

    with loop.Turn("test", time.time() + 60) as turn:
        assert turn.taken
    assert "test loop: PostgreSQL: OperationalError: the leg runs without its turn." in caplog.text


class Leg:
    """Stands in for a loop's actor: records what `loop.run` sends."""

    def __init__(self):
        self.sent = []

    def send_with_options(self, **options):
        self.sent.append(options)


def test_a_leg_long_before_its_turn_waits_in_rabbitmq_not_in_a_thread(database, caplog):
    until = time.time() + 60
    schedule = loop.Schedule(name="test", claim=lambda horizon: [], next_due=lambda: None, message=None)
    leg = Leg()
    caplog.set_level(logging.INFO, logger="pulse.loop")
    with loop.Turn("test", until) as first:  # a scheduler's first tick: its leg runs a minute
        started = time.monotonic()
        assert loop.run(schedule, until + 8, leg) == 0  # the next tick's leg, 8 s later
        assert time.monotonic() - started < 1  # ended at once

    assert first.taken
    [again] = leg.sent
    assert again["args"] == (until + 8,)
    assert (until - loop.WAIT_S / 2 - time.time()) * 1000 - 1500 < again["delay"] <= (until - time.time()) * 1000
    assert "test loop: the leg before runs 60 s more: this one waits its turn in RabbitMQ." in caplog.text
