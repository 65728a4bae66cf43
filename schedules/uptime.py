"""Uptime scheduling: each minute's tick runs a short loop that claims checks as they come due
(sub-minute intervals included) and sends them; it never runs a check itself."""

from __future__ import annotations

import logging
import time

import dramatiq
from periodiq import cron

from actors.uptime import check
from pulse import scheduling
from pulse.db import db
from pulse.models import utcnow
from pulse.ticks import Tick, stopping

logger = logging.getLogger(__name__)

LOOP_SECONDS = 62  # a little past the next tick, so a late tick leaves no gap
IDLE_WAKE = 0.5  # seconds between claims when nothing is due sooner
START_EVERY = 5  # seconds between looks for components without a slot


@dramatiq.actor(queue_name="uptime", periodic=cron("* * * * *"), actor_class=Tick, max_retries=0, time_limit=90_000)
def schedule() -> None:
    deadline = time.monotonic() + LOOP_SECONDS
    next_start = 0.0
    sent = 0
    while time.monotonic() < deadline and not stopping.is_set():
        if time.monotonic() >= next_start:
            scheduling.start_new(utcnow())
            next_start = time.monotonic() + START_EVERY
        # Sent before the claim commits: a crash in between leaves the slots to claim again (a
        # check sent twice is recorded once), never a slot claimed but not sent.
        with db.atomic():
            claimed = scheduling.claim(utcnow())
            for component_id, scheduled_at in claimed:
                check.send(component_id, scheduled_at.isoformat())
        sent += len(claimed)
        if len(claimed) < 1000:
            stopping.wait(_until_next_due(deadline))
    if stopping.is_set():
        schedule.send()  # hand the rest of the minute to another worker
    logger.info("Scheduler loop sent %d check(s).", sent)


def _until_next_due(deadline: float) -> float:
    due = scheduling.next_due()
    wait = IDLE_WAKE if due is None else (due - utcnow()).total_seconds()
    return max(0.0, min(wait, IDLE_WAKE, deadline - time.monotonic()))
