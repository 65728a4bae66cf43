"""RabbitMQ, as Pulse uses it: its queues (their names, types and arguments, where a message
goes) and connections to the nodes of the broker URL, here; dramatiq's broker with Pulse's
consumer and middleware (`broker`); declaring and migrating the queues (`queues`); publishing in
transactions (`publish`); and direct operations for operators: counts, purges, taking messages out
of a `.XQ`, vhosts (`admin`).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import dramatiq
import pika
import pika.exceptions
from dramatiq.brokers.rabbitmq import DEAD_MESSAGE_TTL
from dramatiq.common import q_name

from pulse.config import Settings, redact

logger = logging.getLogger(__name__)

#: One queue per domain; dramatiq adds ``<queue>.DQ`` (delays, backoff) and ``<queue>.XQ`` (dead letters).
QUEUES = ("uptime", "metrics", "notifications", "oncall", "cleanup", "calculated-metrics")

#: The topic exchange locations publish their results to, each with its own name as routing key
#: (RabbitMQ's topic permissions hold a location's user to its own name). It is bound to the
#: `uptime` queue, where central workers record them (`pulse.locations`).
RESULTS = "pulse.results"

#: Queue arguments are fixed when a queue is first declared, so priorities exist from the start.
#: Two levels: urgent messages (an incident opened, an on-call page) go ahead of routine ones.
#: RabbitMQ keeps a sub-queue per level, each one costing throughput (docs/performance.md).
PRIORITY_ROUTINE = 0
PRIORITY_URGENT = 1
MAX_PRIORITY = PRIORITY_URGENT

#: Queue types (PULSE_QUEUE_TYPE). Quorum queues are replicated over a cluster's nodes but have no
#: priorities (RabbitMQ 3.x): there, each queue has an urgent twin, ``<queue>.urgent``, that takes
#: the urgent messages, so a backlog of routine ones never stands in front of them.
CLASSIC = "classic"
QUORUM = "quorum"
URGENT = ".urgent"

# pika connection parameters, unless the URL sets them. Heartbeats detect a dead peer in about a minute.
CONNECTION_DEFAULTS = {
    "heartbeat": "30",
    "connection_attempts": "3",
    "retry_delay": "1",
    "socket_timeout": "5",
    "blocked_connection_timeout": "30",
}


def amqp_url(url: str) -> str:
    """The broker URL with Pulse's connection defaults added where it sets none."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    return parts._replace(query=urlencode({**CONNECTION_DEFAULTS, **query})).geturl()


def xq(queue_name: str) -> str:
    return f"{queue_name}.XQ"


def dq(queue_name: str) -> str:
    return f"{queue_name}.DQ"


def urgent(queue_name: str) -> str:
    return queue_name + URGENT


def queue_names(queue_type: str) -> tuple[str, ...]:
    """The queues workers consume (each with its ``.DQ`` and ``.XQ``): the domains' queues, and
    with quorum queues their urgent twins."""
    return QUEUES + tuple(urgent(q) for q in QUEUES) if queue_type == QUORUM else QUEUES


def arguments(queue_name: str, queue_type: str) -> dict[str, Any]:
    """The arguments a queue, a ``.DQ`` or a ``.XQ`` is declared with. Classic ones are dramatiq's
    own, priorities included; quorum ones dead-letter at least once (RabbitMQ keeps a rejected
    message until its ``.XQ`` has it, which needs ``x-overflow: reject-publish``)."""
    if queue_name.endswith(".XQ"):
        declared: dict[str, Any] = {"x-message-ttl": DEAD_MESSAGE_TTL}
    else:
        declared = {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": xq(q_name(queue_name))}
        if queue_type == CLASSIC:
            declared["x-max-priority"] = MAX_PRIORITY
        else:
            declared |= {"x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish"}
    if queue_type == QUORUM:
        declared["x-queue-type"] = QUORUM
    return declared


def routed(message: dramatiq.Message, queue_type: str) -> dramatiq.Message:
    """The message as it is published: with quorum queues, an urgent one goes to its queue's urgent twin."""
    if (
        queue_type != QUORUM
        or message.options.get("broker_priority") != PRIORITY_URGENT
        or message.queue_name.endswith(URGENT)
    ):
        return message
    return message.copy(queue_name=urgent(message.queue_name))


def parameters(settings: Settings, *, attempts: int | None = None) -> list[pika.URLParameters]:
    """pika's parameters for each node of the broker URL, in order (pika connects to the first that
    answers). ``attempts``: rounds over the nodes, instead of the URL's (3 by default)."""
    nodes = [pika.URLParameters(amqp_url(url)) for url in settings.broker_urls]
    if attempts is not None:
        for node in nodes:  # pika takes the last node's
            node.connection_attempts = attempts
    return nodes


@contextlib.contextmanager
def channel(
    settings: Settings, *, attempts: int | None = None
) -> Iterator[pika.adapters.blocking_connection.BlockingChannel]:
    """A short-lived channel on its own connection (to the first node that answers). ``attempts``:
    connection attempts, instead of the URL's (3 by default); 1 for an answer within one socket
    timeout per node (a scrape, a health check)."""
    connection = pika.BlockingConnection(parameters(settings, attempts=attempts))
    try:
        yield connection.channel()
    finally:
        if connection.is_open:
            connection.close()


def wait_for(settings: Settings) -> None:
    """Return once RabbitMQ answers: a worker or a scheduler started before it (compose starts
    them together) waits, one warning line per attempt, instead of failing (and exits on SIGTERM)."""

    def attempt() -> str | None:
        try:
            with channel(settings, attempts=1):
                return None
        except (pika.exceptions.AMQPError, OSError) as e:
            return f"RabbitMQ does not answer at {redact(settings.broker_url)} ({type(e).__name__})"

    retry(attempt)


def retry(attempt: Callable[[], str | None]) -> None:
    """Call ``attempt`` until it returns None; each other answer, why it must wait, is one warning
    line saying when it tries again, at a growing interval (up to 30 s). pika is kept quiet
    meanwhile (it narrates each failed attempt with a traceback), and SIGTERM ends the wait."""
    delay = 1.0
    pika_logger = logging.getLogger("pika")
    level = pika_logger.level
    pika_logger.setLevel(logging.CRITICAL)
    try:
        with stoppable():
            while (problem := attempt()) is not None:
                logger.warning("%s: trying again in %.0f s.", problem, delay)
                time.sleep(delay)
                delay = min(delay * 2, 30.0)
    finally:
        pika_logger.setLevel(level)


@contextlib.contextmanager
def stoppable() -> Iterator[None]:
    """While waiting for RabbitMQ (or a queue), exit on SIGTERM. A dramatiq worker process waits
    as it boots, when dramatiq's own handler only notes a first SIGTERM for after the boot: a
    worker told to stop meanwhile would otherwise wait on, and its ``dramatiq`` with it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
