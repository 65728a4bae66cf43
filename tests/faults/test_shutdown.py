"""Drill 8: SIGTERM lets the messages in flight finish and returns the rest to the queue.

"Nothing lost" here: every message is processed exactly once, across the worker stopped with
SIGTERM and the one started after it; no message is left started but not finished.
"""

from tests.support import actors
from tests.support.models import Attempt
from tests.support.wait import wait_for

MESSAGES = 8


def started(keys):
    return [k for k in keys if Attempt.count(f"{k}:start")]


def test_sigterm_finishes_the_messages_in_flight_and_returns_the_rest(workers):
    keys = [f"m{i}" for i in range(MESSAGES)]
    first = workers(threads=2)
    for key in keys:
        actors.two_steps.send(key, 1.0)
    wait_for(lambda: len(started(keys)) >= 2, "two messages in flight")

    assert first.stop(timeout=30) == 0  # SIGTERM, and the process exits by itself

    in_flight = started(keys)
    assert in_flight and all(Attempt.count(k) == 1 for k in in_flight)  # each finished, none half-done
    workers(threads=2)
    wait_for(lambda: all(Attempt.count(k) == 1 for k in keys), "every message done", timeout=60)
    assert all(Attempt.count(f"{k}:start") == 1 and Attempt.count(k) == 1 for k in keys)  # once each
