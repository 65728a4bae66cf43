"""Uptime scheduling: each minute's tick runs a short loop that claims checks a moment before they
come due (sub-minute intervals included) and sends each at its time; it never runs a check itself."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import dramatiq
from periodiq import cron

from actors.uptime import check
from pulse import scheduling
from pulse.db import db
from pulse.models import utcnow
from pulse.ticks import Tick, stopping

logger = logging.getLogger(__name__)

LOOP_SECONDS = 62  # a little past the next tick, so a late tick leaves no gap
LOOKAHEAD = timedelta(milliseconds=100)  # claim what comes due this soon, then send each on time
IDLE_WAKE = 0.5  # seconds between claims when nothing is due sooner
START_EVERY = 5  # seconds between looks for components without a slot


class _StoppingError(Exception):
    """The worker is shutting down: undo the claim in progress."""


@dramatiq.actor(queue_name="uptime", periodic=cron("* * * * *"), actor_class=Tick, max_retries=0, time_limit=90_000)
def schedule() -> None:
    deadline = time.monotonic() + LOOP_SECONDS
    next_start = 0.0
    sent = 0
    try:
        while time.monotonic() < deadline and not stopping.is_set():
            if time.monotonic() >= next_start:
                scheduling.start_new(utcnow())
                next_start = time.monotonic() + START_EVERY
            sent += _claim_and_send()
            stopping.wait(_until_next_due(deadline))
    except _StoppingError:
        pass
    if stopping.is_set():
        schedule.send()  # hand the rest of the minute to another worker
    logger.info("Scheduler loop sent %d check(s).", sent)


def _claim_and_send() -> int:
    """Claim the checks due within `LOOKAHEAD` and send each at its time.

    The sends happen before the claim commits: a crash or a shutdown in between leaves the slots
    to claim again (a check sent twice is recorded once), never a slot claimed but not sent.
    """
    with db.atomic():
        claimed = sorted(scheduling.claim(utcnow() + LOOKAHEAD), key=lambda row: row[1])
        for component_id, scheduled_at in claimed:
            wait = (scheduled_at - utcnow()).total_seconds()
            if wait > 0 and stopping.wait(wait):
                raise _StoppingError
            check.send(component_id, scheduled_at.isoformat())
    return len(claimed)


def _until_next_due(deadline: float) -> float:
    """Seconds to sleep before the next claim: until a moment before the next check is due."""
    due = scheduling.next_due()
    wait = IDLE_WAKE if due is None else (due - utcnow() - LOOKAHEAD).total_seconds()
    return max(0.0, min(wait, IDLE_WAKE, deadline - time.monotonic()))
