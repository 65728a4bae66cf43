"""One leg of a loop at a time (`pulse.loop.Turn`): against the real PostgreSQL."""

import dataclasses
import logging
import time
from datetime import timedelta

import dramatiq
import pytest

from pulse import loop
from pulse.db import db
from pulse.rabbitmq import PRIORITY_URGENT
from pulse.ticks import stopping


@pytest.fixture(autouse=True)
def running():
    """As in a worker that runs: an in-process worker stopped by an earlier test leaves it set."""
    stopping.clear()


def test_a_copy_of_a_running_leg_ends_and_another_leg_ends_at_once(database):
    until = time.time() + 60
    with loop.Turn("test", until) as first:
        started = time.monotonic()
        with loop.Turn("test", until + 0.5) as copy:  # redelivered while the first runs on
            pass
        waited = time.monotonic() - started
        started = time.monotonic()
        with loop.Turn("test", until + 8) as tick:  # a tick's leg, or a second scheduler's
            pass
        ended_after = time.monotonic() - started

    assert first.taken and first.held
    assert not copy.taken and waited >= loop.CONFIRM_S  # in case the first was dying
    assert not tick.taken and not tick.held and ended_after < loop.CONFIRM_S  # no thread held waiting


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


def test_without_postgresql_the_leg_runs_anyway_and_leaves_the_next_to_the_ticks(settings, monkeypatch, caplog):
    unreachable = dataclasses.replace(settings, database_url="postgresql://postgres@127.0.0.1:1/pulse")
    monkeypatch.setattr(loop, "get_settings", lambda: unreachable)
    leg = Leg()

    with loop.Turn("test", time.time() + 60) as turn:
        assert turn.taken and not turn.held
    assert loop.run(quiet("test"), time.time() - 1, leg) == 0
    assert "test loop: PostgreSQL: OperationalError: the leg runs without its turn." in caplog.text
    assert leg.sent == []  # legs without their turn would pile up, a thread each, every minute


def quiet(name):
    """A loop with nothing to claim."""
    return loop.Schedule(name=name, claim=lambda horizon: [], next_due=lambda: None, message=None)


class Leg:
    """Stands in for a loop's actor: records what `loop.run` sends, after ``failures`` failed sends."""

    def __init__(self, failures=0):
        self.sent, self.failures = [], failures

    def send_with_options(self, **options):
        if self.failures:
            self.failures -= 1
            raise dramatiq.errors.ConnectionClosed("RabbitMQ is away")
        self.sent.append(options)


def test_a_leg_at_its_deadline_sends_the_next_minutes_leg(database):
    leg = Leg()
    until = time.time() + 0.3

    assert loop.run(quiet("test"), until, leg) == 0

    [sent] = leg.sent
    [next_until] = sent["args"]
    assert time.time() + loop.LEG_SECONDS - 1 < next_until <= time.time() + loop.LEG_SECONDS
    assert sent["broker_priority"] == PRIORITY_URGENT and "delay" not in sent


def test_a_leg_whose_worker_stops_sends_the_rest_of_itself(database):
    leg = Leg()
    until = time.time() + 60
    stopping.set()

    assert loop.run(quiet("test"), until, leg) == 0

    assert [sent["args"] for sent in leg.sent] == [(until,)]


def test_a_leg_while_another_runs_ends_at_once_and_sends_nothing(database, caplog):
    leg = Leg()
    until = time.time() + 60
    caplog.set_level(logging.INFO, logger="pulse.loop")
    with loop.Turn("test", until) as running:
        started = time.monotonic()
        assert loop.run(quiet("test"), until + 8, leg) == 0  # the next tick's leg, 8 s later
        assert time.monotonic() - started < 1

    assert running.held and leg.sent == []  # the running leg sends the next one
    assert "test loop: another leg runs: this one ends." in caplog.text


def test_a_leg_sends_the_next_through_a_short_rabbitmq_outage(database, caplog, monkeypatch):
    monkeypatch.setattr(loop, "RETRY_WAIT", 0.01)
    leg = Leg(failures=2)

    loop.run(quiet("test"), time.time(), leg)

    assert len(leg.sent) == 1
    assert caplog.text.count("test loop: could not send the next leg (ConnectionClosed): trying again in") == 2


def test_a_leg_gives_the_loop_to_the_ticks_after_a_long_outage(database, caplog, monkeypatch):
    monkeypatch.setattr(loop, "RETRY_WAIT", 0.01)
    monkeypatch.setattr(loop, "SEND_NEXT_S", 0.05)
    leg = Leg(failures=1_000_000)

    loop.run(quiet("test"), time.time(), leg)

    assert leg.sent == []
    assert (
        "test loop: could not send the next leg (ConnectionClosed): the next tick starts the loop again." in caplog.text
    )


class Publisher:
    """Stands in for `BatchPublisher`: records each transaction's messages and when it was sent."""

    def __init__(self):
        self.sent = []

    def publish(self, messages):
        self.sent.append((loop.utcnow(), list(messages)))


def test_a_schedule_claims_its_whole_gather_ahead_and_sends_what_falls_within_it_together(database):
    start = loop.utcnow()
    due = [start + timedelta(milliseconds=ms) for ms in (0, 100, 220)]
    horizons = []

    def claim(horizon):
        horizons.append(horizon)
        return [(key, at) for key, at in enumerate(due) if at <= horizon]

    schedule = loop.Schedule(
        name="test", claim=claim, next_due=lambda: None, message=lambda key, at: key,
        gather=timedelta(milliseconds=200),
    )  # fmt: skip
    publisher = Publisher()

    assert loop._claim_and_send(schedule, publisher) == 3

    [horizon] = horizons
    assert horizon - start >= timedelta(milliseconds=250)  # the gather, and `CLAIM_AHEAD` to claim it in
    first_sent, first = publisher.sent[0]
    assert first[:2] == [0, 1] and first_sent >= due[0] + schedule.gather  # the second waited for the first
    assert sorted(key for _, keys in publisher.sent for key in keys) == [0, 1, 2]
    assert all(sent_at >= due[key] for sent_at, keys in publisher.sent for key in keys)  # never early
