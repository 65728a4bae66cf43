"""The claim-and-send loops (`pulse.recurring.loop`): one process at a time runs each (`Turns`), a runner
rides out outages and gives its turn up as it stops. Against the real PostgreSQL and RabbitMQ."""

import dataclasses
import logging
import threading
import time
from datetime import timedelta

import dramatiq
import pika.exceptions
import psycopg
import pytest

from pulse import pause
from pulse.db import db
from pulse.rabbitmq import queues
from pulse.rabbitmq.publish import BatchPublisher
from pulse.recurring import loop
from tests.support.wait import wait_for


@pytest.fixture
def turns(settings):
    """Make ``Turns`` as separate processes would have them; all closed at the end."""
    made = []

    def make(database_url=settings.database_url):
        made.append(loop.Turns(database_url))
        return made[-1]

    yield make
    for each in made:
        each.close()


class Publisher:
    """Stands in for `BatchPublisher`: records each transaction's messages and when it was sent,
    after ``failures`` failed transactions."""

    def __init__(self, failures=0, waiting=0):
        self.sent, self.failures, self.closed, self.waiting_now, self.asked = [], failures, 0, waiting, 0

    def publish(self, messages):
        if self.failures:
            self.failures -= 1
            raise pika.exceptions.StreamLostError("RabbitMQ is away")
        self.sent.append((loop.utcnow(), list(messages)))

    def waiting(self, queue_name):
        self.asked += 1
        return self.waiting_now

    def idle(self):
        pass

    def close(self):
        self.closed += 1


def claiming(name, rows=(), bounded=False):
    """A loop that claims ``rows`` (key, due) at each claim, recording the claims made."""
    claims = []

    def claim(horizon):
        claims.append(horizon)
        return list(rows)

    declared = loop.Loop(name=name, claim=claim, next_due=lambda: None, message=lambda key, due: key, bounded=bounded)
    return declared, claims


def test_one_process_at_a_time_has_a_loops_turn_and_other_loops_do_not_wait(turns):
    first, second = turns(), turns()

    assert first.take("uptime") and first.take("uptime")  # taken, then held
    assert not second.take("uptime")
    assert second.take("metrics")


def test_a_dead_processs_turn_passes_to_another_and_the_dead_one_learns_it(turns, database, monkeypatch):
    dead, other = turns(), turns()
    assert dead.take("uptime")
    db.execute_sql("SELECT pg_terminate_backend(%s)", (dead._conn.info.backend_pid,))  # as when its process dies

    assert wait_for(lambda: other.take("uptime"), "the lock to be free", timeout=5)
    assert dead.take("uptime")  # until its next check (a claim still never doubles a slot)
    monkeypatch.setattr(loop, "CHECK_EVERY_S", 0)
    with pytest.raises(psycopg.OperationalError):
        dead.take("uptime")
    assert not dead.holds("uptime")
    assert not dead.take("uptime")  # a new connection: the other process has it


def test_only_the_runner_with_the_turn_claims(turns):
    declared, claims = claiming("test")
    stop = threading.Event()
    running = loop.Runner(declared, turns(), stop, Publisher())
    waiting = loop.Runner(declared, turns(), stop, Publisher())

    assert running.step() == loop.IDLE_WAKE_S and len(claims) == 1
    assert waiting.step() == loop.TAKE_EVERY_S and len(claims) == 1
    assert running.running and not waiting.running


def test_a_stopping_runner_gives_its_turn_up_at_once(turns, caplog):
    caplog.set_level(logging.INFO, logger="pulse.recurring.loop")
    declared, claims = claiming("test")
    stop = threading.Event()
    runner = loop.Runner(declared, turns(), stop, publisher := Publisher())
    thread = threading.Thread(target=runner.run)
    thread.start()
    wait_for(lambda: claims, "a claim")

    stop.set()
    thread.join(2)

    assert not thread.is_alive() and publisher.closed
    assert turns().take("test")  # another process takes it without waiting
    assert "test loop: running in this process." in caplog.text
    assert "test loop: stopped in this process, 0 slot(s) sent, 0 skipped." in caplog.text


def test_a_runner_stopping_in_a_gather_undoes_its_claim(turns):
    due = loop.utcnow() + timedelta(seconds=5)
    declared, _ = claiming("test", [(1, due)])
    stop = threading.Event()
    runner = loop.Runner(declared, turns(), stop, publisher := Publisher())
    threading.Timer(0.2, stop.set).start()

    started = time.monotonic()
    assert runner.step() == 0.0

    assert time.monotonic() - started < 2 and publisher.sent == []  # rolled back, sent by whoever runs next


def test_without_postgresql_a_runner_warns_once_and_tries_again(turns, caplog):
    declared, claims = claiming("test")
    unreachable = turns("postgresql://postgres@127.0.0.1:1/pulse")
    runner = loop.Runner(declared, unreachable, threading.Event(), Publisher())

    assert [runner.step() for _ in range(3)] == [loop.RETRY_WAIT_S] * 3

    assert claims == [] and not runner.running
    assert caplog.text.count("test loop: OperationalError: trying again every 1 s.") == 1


def test_a_runner_rides_out_a_rabbitmq_outage_and_says_when_it_is_over(turns, caplog):
    caplog.set_level(logging.INFO, logger="pulse.recurring.loop")
    now = loop.utcnow()
    declared, claims = claiming("test", [(1, now), (2, now)])
    runner = loop.Runner(declared, turns(), threading.Event(), publisher := Publisher(failures=2))

    assert [runner.step() for _ in range(3)] == [loop.RETRY_WAIT_S, loop.RETRY_WAIT_S, loop.IDLE_WAKE_S]

    assert len(claims) == 3 and [keys for _, keys in publisher.sent] == [[1, 2]]
    assert runner.running  # the turn outlives a RabbitMQ outage
    assert caplog.text.count("test loop: StreamLostError: trying again every 1 s.") == 1
    assert "test loop: working again after" in caplog.text


def test_a_loop_claims_its_whole_gather_ahead_and_sends_what_falls_within_it_together(turns):
    start = loop.utcnow()
    due = [start + timedelta(milliseconds=ms) for ms in (0, 100, 220)]
    horizons = []

    def claim(horizon):
        horizons.append(horizon)
        return [(key, at) for key, at in enumerate(due) if at <= horizon]

    declared = loop.Loop(
        name="test", claim=claim, next_due=lambda: None, message=lambda key, at: key,
        gather=timedelta(milliseconds=200),
    )  # fmt: skip
    publisher = Publisher()

    assert loop.Runner(declared, turns(), threading.Event(), publisher).claim_and_send() == 3

    [horizon] = horizons
    assert horizon - start >= timedelta(milliseconds=250)  # the gather, and `CLAIM_AHEAD` to claim it in
    first_sent, first = publisher.sent[0]
    assert first[:2] == [0, 1] and first_sent >= due[0] + declared.gather  # the second waited for the first
    assert sorted(key for _, keys in publisher.sent for key in keys) == [0, 1, 2]
    assert all(sent_at >= due[key] for sent_at, keys in publisher.sent for key in keys)  # never early


def test_a_loop_with_a_lead_sends_its_batch_that_long_before_the_first_is_due(turns):
    start = loop.utcnow()
    lead, gather = timedelta(milliseconds=300), timedelta(milliseconds=200)
    due = [start + timedelta(milliseconds=ms) for ms in (300, 400, 520)]
    horizons = []

    def claim(horizon):
        horizons.append(horizon)
        return [(key, at) for key, at in enumerate(due) if at <= horizon]

    declared = loop.Loop(
        name="test", claim=claim, next_due=lambda: None, message=lambda key, at: key, gather=gather, lead=lead
    )
    publisher = Publisher()

    assert loop.Runner(declared, turns(), threading.Event(), publisher).claim_and_send() == 3

    [horizon] = horizons
    assert horizon - start >= lead + gather + loop.CLAIM_AHEAD
    first_sent, first = publisher.sent[0]
    assert first[:2] == [0, 1]  # due within the gather after the first: together
    assert first_sent >= due[0] - lead + gather  # never earlier than the lead before the gather's end
    assert first_sent < due[0] + gather  # when a loop without a lead would still wait
    assert sorted(key for _, keys in publisher.sent for key in keys) == [0, 1, 2]
    assert all(sent_at >= due[key] - lead for sent_at, keys in publisher.sent for key in keys)


def test_a_loop_that_does_not_claim_ahead_claims_what_is_due_and_wakes_when_the_next_is(turns):
    start = loop.utcnow()
    horizons = []
    next_due = start + timedelta(milliseconds=300)

    def claim(horizon):
        horizons.append(horizon)
        return []

    declared = loop.Loop(name="test", claim=claim, next_due=lambda: next_due, message=lambda key, at: key, ahead=False)
    runner = loop.Runner(declared, turns(), threading.Event(), Publisher())

    assert runner.claim_and_send() == 0
    [horizon] = horizons
    assert start <= horizon < start + timedelta(milliseconds=50)
    assert runner._until_next_due() > 0.2  # woken at the due time, not a lookahead before it


@pytest.mark.parametrize("idle", [True, False], ids=["answering heartbeats", "silent"])
def test_an_idle_publisher_keeps_its_connection_by_answering_heartbeats(settings, rabbit, idle):
    publisher = BatchPublisher(dataclasses.replace(settings, broker_url=settings.broker_url + "?heartbeat=1"))
    message = dramatiq.Message(queue_name="cleanup", actor_name="noop", args=(), kwargs={}, options={})
    publisher.publish([message])
    connection = publisher.connection

    for _ in range(8):  # 4 s: RabbitMQ closes a connection that misses two heartbeats of 1 s
        time.sleep(0.5)
        if idle:
            publisher.idle()
    try:
        if idle:
            publisher.publish([message])
            assert publisher.connection is connection
        else:
            with pytest.raises(pika.exceptions.AMQPError):
                publisher.publish([message])
    finally:
        publisher.close()


def test_a_bounded_loop_skips_what_comes_due_while_its_queue_is_over_the_bound(turns, caplog, monkeypatch):
    monkeypatch.setattr(loop, "BACKLOG_EVERY_S", 0)
    caplog.set_level(logging.INFO, logger="pulse.recurring.loop")
    now = loop.utcnow()
    declared, claims = claiming("uptime", [(1, now), (2, now)], bounded=True)
    runner = loop.Runner(declared, turns(), threading.Event(), publisher := Publisher(waiting=11))
    runner.bound = 10

    runner.claim_and_send()
    runner.claim_and_send()
    publisher.waiting_now = 10  # the workers caught up
    runner.claim_and_send()

    assert len(claims) == 3 and [keys for _, keys in publisher.sent] == [[1, 2]]  # the first two skipped
    assert runner.skipped == 4 and runner.sent == 2
    warned = "uptime loop: 11 messages wait in 'uptime', more than PULSE_BACKLOG_BOUND (10): what comes due is"
    assert caplog.text.count(warned) == 1
    assert "uptime loop: 'uptime' is back under its bound: 4 slot(s) skipped." in caplog.text


def test_a_loop_that_is_not_bounded_never_asks_how_much_waits(turns):
    now = loop.utcnow()
    declared, _ = claiming("oncall", [(1, now)])
    runner = loop.Runner(declared, turns(), threading.Event(), publisher := Publisher(waiting=1_000_000))

    runner.claim_and_send()

    assert publisher.asked == 0 and [keys for _, keys in publisher.sent] == [[1]]


def test_a_publisher_reads_how_many_messages_wait_in_a_queue(settings, rabbit):
    queues.declare(settings)
    publisher = BatchPublisher(settings)
    message = dramatiq.Message(queue_name="cleanup", actor_name="noop", args=(), kwargs={}, options={})
    try:
        assert publisher.waiting("cleanup") == 0
        publisher.publish([message] * 3)
        assert publisher.waiting("cleanup") == 3
    finally:
        publisher.close()


def test_a_loop_whose_queue_is_paused_claims_nothing_until_it_resumes(turns, caplog, monkeypatch):
    caplog.set_level(logging.INFO, logger="pulse.recurring.loop")
    now = loop.utcnow()
    declared, claims = claiming("oncall", [(1, now)])
    runner = loop.Runner(declared, turns(), threading.Event(), publisher := Publisher())

    monkeypatch.setattr(pause, "paused", frozenset({"oncall"}))
    assert runner.step() == loop.TAKE_EVERY_S and runner.step() == loop.TAKE_EVERY_S
    assert claims == [] and publisher.sent == []  # the escalation waits: nothing claimed, so nothing lost
    monkeypatch.setattr(pause, "paused", frozenset({"uptime"}))  # another queue's pause changes nothing here
    runner.step()

    assert len(claims) == 1 and [keys for _, keys in publisher.sent] == [[1]]
    assert caplog.text.count("oncall loop: 'oncall' is paused: nothing is claimed or sent until it resumes.") == 1
    assert caplog.text.count("oncall loop: 'oncall' resumed: each row's latest slot due is sent now.") == 1
