"""`pulse health`'s worker probe, read from the beats of the worker processes running here
(`pulse.middleware.beat`): a live run of this test's own, whose beats the test writes."""

import dataclasses
import json
import os
import time

import pytest

from pulse import health
from pulse.middleware.beat import beats_directory
from pulse.runs import _start_time


@pytest.fixture
def beats(tmp_path, settings):
    """Write beats into a run directory whose main process is this one (so the run is live)."""
    pid = os.getpid()
    run = tmp_path / f"{pid}-{_start_time(pid)}"
    directory = beats_directory(str(tmp_path), str(run))
    os.makedirs(directory)
    current = dataclasses.replace(settings, metrics_dir=str(tmp_path))

    def write(pid=pid, **fields):
        beat = {"pid": pid, "at": time.time(), "threads": 2, "running": [], "consumers": {"uptime": True}}
        beat |= {"paused": [], "completed": 7, **fields}
        with open(os.path.join(directory, f"{pid}.json"), "w") as file:
            json.dump(beat, file)
        return current

    return write


def running(actor, seconds_ago, seconds_left):
    now = time.time()
    return {"actor": actor, "queue": "uptime", "since": now - seconds_ago, "until": now + seconds_left}


def test_a_process_that_beats_and_gets_on_is_healthy(beats):
    current = beats(running=[running("checks", 1, 299)], paused=["uptime"])
    assert health.probe_workers(current, required=True) == (
        "1 process(es) beating, 1 of 2 thread(s) busy, 7 message(s) completed; "
        "paused: uptime (`pulse queues resume <queue>`)"
    )


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        (lambda: {"at": time.time() - 60}, "last beat 60 s ago: frozen, or held by a message stuck in C"),
        (lambda: {"consumers": {"uptime": True, "uptime.DQ": False}}, "its consumer of uptime.DQ stopped"),
        (
            lambda: {"running": [running("checks", 400, -100), running("check", 320, -20)]},
            "all 2 thread(s) stuck past their time limit (the oldest: checks on uptime, running for 400 s)",
        ),
    ],
)
def test_a_process_frozen_stuck_or_without_its_consumer_is_not(beats, fields, says):
    current = beats(**fields())
    with pytest.raises(RuntimeError) as raised:
        health.probe_workers(current)
    assert str(raised.value).startswith(f"worker process {os.getpid()}") and str(raised.value).endswith(says)


def test_one_thread_past_its_limit_of_two_is_not_a_stuck_process(beats):
    current = beats(running=[running("checks", 400, -100)])
    assert health.probe_workers(current).startswith("1 process(es) beating, 1 of 2 thread(s) busy")


def test_no_worker_here_fails_only_where_a_worker_must_run(beats, settings, tmp_path):
    beats(pid=2**22 + 1)  # a process that is gone: its beat is ignored
    current = dataclasses.replace(settings, metrics_dir=str(tmp_path))
    assert health.probe_workers(current) == "no worker runs here"
    with pytest.raises(RuntimeError, match="no worker process beats here"):
        health.probe_workers(current, required=True)
