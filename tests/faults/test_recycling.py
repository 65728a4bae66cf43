"""Drill 17: worker processes recycled, for their memory and for the messages they processed.

A worker process past PULSE_MAX_MEMORY_PER_PROCESS_MIB or PULSE_MAX_MESSAGES_PER_PROCESS asks its
``dramatiq`` main process (SIGHUP) to restart its worker processes; each finishes the messages it
runs and hands back the ones it holds. "Nothing lost, nothing twice": every message is started
once and finished once, across the processes replaced and their replacements; the main process
keeps running, its PID unchanged, with no supervisor involved.
"""

import glob
import os

from tests.support import actors
from tests.support.env import ENV
from tests.support.models import Attempt
from tests.support.wait import wait_for
from tests.support.worker import free_port

RESTARTS = "Sending signal 'SIGHUP' to subprocesses"
RECYCLING = "Recycling worker process"


def metrics_port():
    """A port of the drill's own: the restarted metrics process binds it again."""
    return {"PULSE_METRICS_PORT": str(free_port())}


def once_each(keys):
    return all(Attempt.count(f"{k}:start") == 1 and Attempt.count(k) == 1 for k in keys)


def done(keys):
    return all(Attempt.count(k) for k in keys)


def pids(keys):
    return {a.pid for a in Attempt.select(Attempt.pid).where(Attempt.key.in_(keys))}


def metric_files_of_gone_processes(worker):
    """The Prometheus files left in the run's directory by worker processes that are gone."""
    files = glob.glob(os.path.join(ENV["PULSE_METRICS_DIR"], f"{worker.process.pid}-*", "*.db"))
    return [f for f in files if not os.path.exists(f"/proc/{f.removesuffix('.db').rpartition('_')[2]}")]


def assert_quiet(output):
    """Each restart is asked for in one line, once, and nothing is stopped hard or crashes."""
    assert output.count(RECYCLING) == output.count(RESTARTS) >= 1, output
    loud = ("Traceback", "CRITICAL", "ERROR", '"level": "critical"', '"level": "error"')  # plain lines and JSON
    for sign in (*loud, "exited unexpectedly", "Killing worker process"):
        assert sign not in output, output


def test_a_leaking_actors_process_is_replaced_and_no_message_is_lost_or_run_twice(workers):
    # A fresh process holds about 95 MiB; each message leaks 10 and takes 0.3 s, so restarts come
    # while messages run and others wait in the processes' prefetch.
    env = {"PULSE_MAX_MEMORY_PER_PROCESS_MIB": "150", "PULSE_MAX_MESSAGES_PER_PROCESS": "0", **metrics_port()}
    worker = workers(processes=2, threads=2, env=env)
    keys = [f"leak-{i}" for i in range(40)]
    for key in keys:
        actors.leaky.send(key, 10, 0.3)

    wait_for(lambda: done(keys), "every message done", timeout=120)

    assert once_each(keys)
    assert len(pids(keys)) > 2  # the first two processes were replaced
    assert worker.process.poll() is None  # restarted in place: the same main process, still running
    assert "went past PULSE_MAX_MEMORY_PER_PROCESS_MIB=150 MiB" in worker.output
    assert_quiet(worker.output)


def test_processes_past_their_message_count_at_once_are_restarted_once(workers):
    # The two processes share the load, so both pass 10 messages at about the same moment: one
    # SIGHUP, one line. (A process notices its stop signal within a second: 4 s of work leave some
    # for the new processes.)
    env = {"PULSE_MAX_MESSAGES_PER_PROCESS": "10", **metrics_port()}
    worker = workers(processes=2, threads=2, env=env)
    keys = [f"count-{i}" for i in range(80)]
    for key in keys:
        actors.two_steps.send(key, 0.2)

    wait_for(lambda: done(keys), "every message done", timeout=120)

    assert once_each(keys)
    assert len(pids(keys)) > 2
    assert worker.process.poll() is None
    assert "processed 10 messages (PULSE_MAX_MESSAGES_PER_PROCESS=10)" in worker.output
    assert_quiet(worker.output)
    assert metric_files_of_gone_processes(worker) == []  # each restart starts its metrics afresh
