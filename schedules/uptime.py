"""Uptime scheduling: each minute's tick runs a short loop that claims checks a moment before they
come due (sub-minute intervals included) and sends them at their time; it never runs a check."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import dramatiq
import peewee
import pika.exceptions
from periodiq import cron

from actors.uptime import check
from pulse import scheduling
from pulse.config import get_settings
from pulse.db import db
from pulse.models import utcnow
from pulse.rabbitmq import BatchPublisher
from pulse.ticks import Tick, stopping

logger = logging.getLogger(__name__)

LOOP_SECONDS = 62  # a little past the next tick, so a late tick leaves no gap
LOOKAHEAD = timedelta(milliseconds=100)  # claim what comes due this soon, then send each on time
# Send the checks due this close together in one batch: each RabbitMQ commit costs the broker a
# disk sync, and 50 ms (against 20) took 2,000 checks every 20 s from 3.6 to 3.0 ms of CPU each,
# p99 start lag 57 ms. A longer LOOKAHEAD (250 ms) saved nothing and added 100 ms to the p99.
GATHER = timedelta(milliseconds=50)
IDLE_WAKE = 0.5  # seconds between claims when nothing is due sooner
START_EVERY = 5  # seconds between looks for components without a slot
RETRY_WAIT = 1  # seconds between attempts while RabbitMQ or PostgreSQL is unreachable


class _StoppingError(Exception):
    """The worker is shutting down: undo the claim in progress."""


@dramatiq.actor(queue_name="uptime", periodic=cron("* * * * *"), actor_class=Tick, max_retries=0, time_limit=90_000)
def schedule() -> None:
    deadline = time.monotonic() + LOOP_SECONDS
    next_start = 0.0
    sent = 0
    publisher = BatchPublisher(get_settings())
    try:
        while time.monotonic() < deadline and not stopping.is_set():
            try:
                if time.monotonic() >= next_start:
                    scheduling.start_new(utcnow())
                    next_start = time.monotonic() + START_EVERY
                sent += _claim_and_send(publisher)
                stopping.wait(_until_next_due(deadline))
            except (pika.exceptions.AMQPError, peewee.OperationalError, peewee.InterfaceError) as e:
                # The claim was rolled back (or never made): its slots wait for the next attempt.
                logger.warning("Scheduler loop: %s: trying again in %d s.", type(e).__name__, RETRY_WAIT)
                if not db.is_closed():
                    db.close()  # a broken connection leaves the pool; the next query opens a new one
                stopping.wait(RETRY_WAIT)
    except _StoppingError:
        pass
    finally:
        publisher.close()
    if stopping.is_set():
        schedule.send()  # hand the rest of the minute to another worker
    logger.info("Scheduler loop sent %d check(s).", sent)


def _claim_and_send(publisher: BatchPublisher) -> int:
    """Claim the checks due within `LOOKAHEAD` and send them as they come due: `GATHER` after the
    first unsent one is due, all those due by then, in one RabbitMQ transaction (each commit
    costs the broker a disk sync, so a check may start up to `GATHER` late but never early).

    The sends happen before the claim commits: a crash or a shutdown in between leaves the slots
    to claim again (a check sent twice is recorded once), never a slot claimed but not sent.
    """
    with db.atomic():
        claimed = sorted(scheduling.claim(utcnow() + LOOKAHEAD), key=lambda row: row[1])
        position = 0
        while position < len(claimed):
            wait = (claimed[position][1] + GATHER - utcnow()).total_seconds()
            if wait > 0 and stopping.wait(wait):
                raise _StoppingError
            now = utcnow()
            batch = [row for row in claimed[position:] if row[1] <= now]
            publisher.publish(check.message(component_id, slot.isoformat()) for component_id, slot in batch)
            position += len(batch)
    return len(claimed)


def _until_next_due(deadline: float) -> float:
    """Seconds to sleep before the next claim: until a moment before the next check is due."""
    due = scheduling.next_due()
    wait = IDLE_WAKE if due is None else (due - utcnow() - LOOKAHEAD).total_seconds()
    return max(0.0, min(wait, IDLE_WAKE, deadline - time.monotonic()))
