"""Recycling on the StubBroker: when a worker process asks for its restart, how often, and what its
signals do meanwhile. (Real worker processes being replaced: tests/faults/test_recycling.py.)"""

import logging
import os
import signal

import dramatiq
import pytest

from pulse.middleware import recycling
from pulse.middleware.recycling import Recycling, take_the_reload_lock
from tests.middleware import run


@pytest.fixture
def middleware(stub_broker):
    """The broker's Recycling middleware; the reload lock it took (held until its process exits:
    this one) released at the end, for the next test."""
    found = next(m for m in stub_broker.middleware if isinstance(m, Recycling))
    yield found
    if found.lock is not None:
        os.close(found.lock)


@pytest.fixture
def as_dramatiq_worker(monkeypatch):
    """This process taken for a ``dramatiq`` worker process (its main process: this one, whose
    SIGHUPs are recorded, not sent); its signal handlers restored afterwards."""
    sent = []
    monkeypatch.setattr(recycling, "dramatiq_main", os.getpid)
    monkeypatch.setattr(recycling.os, "kill", lambda pid, signum: sent.append((pid, signum)))
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP)}
    yield sent
    for signum, handler in handlers.items():
        signal.signal(signum, handler)


def test_it_does_nothing_outside_a_dramatiq_worker_process(stub_broker, stub_worker, middleware):
    @dramatiq.actor(broker=stub_broker, queue_name="cleanup")
    def work():
        pass

    middleware.max_messages = 1
    for _ in range(3):
        work.send()
    run(stub_broker, stub_worker)

    assert middleware.statm is None and not middleware.asked  # and the test runner got no SIGHUP


def test_a_process_past_its_message_count_asks_for_a_restart_once_in_one_line(
    stub_broker, middleware, as_dramatiq_worker, json_logs, caplog
):
    caplog.set_level(logging.INFO)
    middleware.max_messages, middleware.max_memory = 2, 0
    worker = dramatiq.Worker(stub_broker, worker_timeout=50, worker_threads=2)
    worker.start()

    @dramatiq.actor(broker=stub_broker, queue_name="cleanup")
    def work():
        pass

    for _ in range(5):
        work.send()
    run(stub_broker, worker)
    worker.stop()

    assert as_dramatiq_worker == [(os.getpid(), signal.SIGHUP)]
    lines = [line for line in json_logs() if line["logger"] == "pulse.middleware.recycling"]
    assert [line["level"] for line in lines] == ["info"]
    assert f"Recycling worker process {os.getpid()}: it processed 2 messages" in lines[0]["msg"]
    assert middleware.lock is not None  # held until this process exits (the fixture lets it go)


def test_a_ceiling_below_what_a_fresh_process_holds_turns_the_memory_limit_off(
    stub_broker, middleware, as_dramatiq_worker, json_logs
):
    middleware.max_memory = 1  # MiB
    middleware.after_worker_boot(stub_broker, None)

    assert middleware.max_memory == 0
    [line] = [line for line in json_logs() if line["logger"] == "pulse.middleware.recycling"]
    assert line["level"] == "warning" and "PULSE_MAX_MEMORY_PER_PROCESS_MIB=1 MiB is less than" in line["msg"]


def test_only_one_process_of_a_run_holds_the_reload_lock(settings):
    first = take_the_reload_lock(settings)
    assert first is not None
    assert take_the_reload_lock(settings) is None  # flock: another open file, as in another process
    os.close(first)  # the process that held it exited
    again = take_the_reload_lock(settings)
    assert again is not None
    os.close(again)


@pytest.mark.parametrize(
    "received, passed",
    [
        ([signal.SIGTERM], [signal.SIGTERM]),
        ([signal.SIGTERM, signal.SIGTERM], [signal.SIGTERM, signal.SIGTERM]),  # dramatiq's hard stop
        ([signal.SIGHUP, signal.SIGTERM], [signal.SIGHUP]),  # already stopping gracefully
        ([signal.SIGHUP, signal.SIGHUP, signal.SIGTERM], [signal.SIGHUP]),
        ([signal.SIGHUP, signal.SIGTERM, signal.SIGTERM], [signal.SIGHUP, signal.SIGTERM]),
        ([signal.SIGTERM, signal.SIGHUP], [signal.SIGTERM]),  # a restart asked while it stops
    ],
)
def test_a_process_stopping_for_a_restart_is_not_stopped_hard_by_the_next_signal(received, passed):
    middleware = Recycling(settings=None, max_messages=1, max_memory=0)
    dramatiq_got = []
    handlers = {signum: middleware._signal_handler(lambda s, _f: dramatiq_got.append(s)) for signum in received}
    for signum in received:
        handlers[signum](signum, None)
    assert dramatiq_got == passed
