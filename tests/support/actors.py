"""Actors for tests that run real `dramatiq pulse.actors tests.support.actors` workers."""

import os
import re
import time

import dramatiq
from dramatiq.middleware import CurrentMessage

from pulse.app.workers import setup_broker
from pulse.db import db
from pulse.errors import PermanentError, TransientError
from tests.support.models import Attempt

broker = setup_broker()  # its middleware includes CurrentMessage
QUEUE = "cleanup"


def record(key: str) -> int:
    """Write this attempt; return its number for the key."""
    number = Attempt.count(key) + 1
    message = CurrentMessage.get_current_message()
    Attempt.create(key=key, message_id=message.message_id if message else "", number=number, pid=os.getpid())
    return number


@dramatiq.actor(queue_name=QUEUE)
def noop(key: str) -> None:
    record(key)


@dramatiq.actor(queue_name=QUEUE)
def always_permanent(key: str) -> None:
    record(key)
    raise PermanentError(f"{key} is rejected for good")


@dramatiq.actor(queue_name=QUEUE)
def always_transient(key: str) -> None:
    number = record(key)
    raise TransientError(f"{key} failed, attempt {number}")


@dramatiq.actor(queue_name=QUEUE)
def permanent_once(key: str) -> None:
    if record(key) == 1:
        raise PermanentError(f"{key} is rejected the first time")


@dramatiq.actor(queue_name=QUEUE, time_limit=120_000)
def slow_first_time(key: str) -> None:
    """The first attempt hangs (the test kills its worker); later ones finish."""
    if record(key) == 1:
        time.sleep(60)


@dramatiq.actor(queue_name=QUEUE)
def two_steps(key: str, seconds: float) -> None:
    """Mark the start (committed at once), then write the result after ``seconds``, in one
    transaction: a message cut short leaves a start without a result."""
    record(f"{key}:start")
    with db.atomic():
        time.sleep(seconds)
        record(key)


@dramatiq.actor(queue_name=QUEUE, time_limit=1_000, max_retries=1)
def stuck_in_c(key: str) -> None:
    """Holds the GIL far past its time limit (a regular expression that backtracks for hours): the
    time limit's exception cannot reach it, nor can any other thread of its process run."""
    record(key)
    re.fullmatch(r"(a+)+$", "a" * 64 + "b")


LEAKED: list[bytes] = []


@dramatiq.actor(queue_name=QUEUE)
def leaky(key: str, mib: int, seconds: float) -> None:
    """Marks the start, keeps ``mib`` MiB of its process's memory for good, as a leak would
    (written, so resident), and writes the result ``seconds`` later: a message cut short leaves a
    start without a result."""
    record(f"{key}:start")
    LEAKED.append(b"\1" * (mib << 20))
    time.sleep(seconds)
    record(key)
