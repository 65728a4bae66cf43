"""Pulse's queues on RabbitMQ (their names, types and arguments, where a message goes) and direct
operations for operators: counts, purges, taking messages out of a `.XQ`.

Counts over AMQP (a passive declare) are exact but know only ready messages; the management API
also knows unacked ones but samples every few seconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

import dramatiq
import pika
import pika.exceptions
import requests
from dramatiq.brokers.rabbitmq import DEAD_MESSAGE_TTL, RabbitmqBroker
from dramatiq.common import q_name

from pulse.config import Settings, get_settings, redact

logger = logging.getLogger(__name__)

API_TIMEOUT = 5  # seconds

#: One queue per domain; dramatiq adds ``<queue>.DQ`` (delays, backoff) and ``<queue>.XQ`` (dead letters).
QUEUES = ("uptime", "metrics", "notifications", "oncall", "cleanup", "calculated-metrics")

#: Queue arguments are fixed when a queue is first declared, so priorities exist from the start.
#: Two levels: urgent messages (an incident opened, an on-call page) go ahead of routine ones.
#: RabbitMQ keeps a sub-queue per level: 10 levels cost a no-op worker 25 % of its throughput against
#: bare dramatiq on 2 cores, 1 level nothing measurable (tests/benchmarks/bench_middleware.py).
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


@dataclasses.dataclass
class QueueCounts:
    queue: str
    type: str | None  # classic or quorum; None: unknown (no such queue, or the management API did not answer)
    ready: int | None  # None: the queue does not exist yet
    unacked: int | None  # None: unknown (the management API did not answer)
    delayed: int | None  # in <queue>.DQ, waiting for their retry
    dead: int | None  # in <queue>.XQ
    consumers: int | None
    # Since each run started, summed over the dramatiq runs on this host (`pulse.runs.processed`,
    # filled in by `pulse queues`); None: no run here.
    completed: int | None = None  # messages that succeeded
    failed: int | None = None  # failed attempts
    paused: bool | None = None  # by `pulse queues pause` (filled in by `pulse queues`); None: unknown


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


def ready_counts(settings: Settings, names: Iterable[str], *, attempts: int | None = None) -> dict[str, int | None]:
    """Ready messages per queue (None for a queue that does not exist), exact, over AMQP."""
    counts: dict[str, int | None] = {}
    with channel(settings, attempts=attempts) as ch:
        for name in names:
            try:
                counts[name] = ch.queue_declare(name, passive=True).method.message_count
            except pika.exceptions.ChannelClosedByBroker as e:
                if e.reply_code != 404:
                    raise
                counts[name] = None
                ch = ch.connection.channel()
    return counts


def management_queues(settings: Settings) -> dict[str, dict]:
    """The management API's view of the vhost's queues, by name. Raises requests.RequestException."""
    response = _management(
        settings,
        "GET",
        f"queues/{quote(settings.vhost, safe='')}",
        params={"columns": "name,type,messages_ready,messages_unacknowledged,consumers,arguments"},
    )
    return {q["name"]: q for q in response.json()}


def recreate_vhost(settings: Settings) -> None:
    """Delete the broker URL's vhost if it exists (and every queue in it), create it again and let
    the URL's user in. Raises requests.RequestException."""
    vhost = quote(settings.vhost, safe="")
    user = quote(unquote(urlsplit(settings.broker_urls[0]).username or "guest"), safe="")
    delete_vhost(settings)
    _management(settings, "PUT", f"vhosts/{vhost}")
    _management(settings, "PUT", f"permissions/{vhost}/{user}", json={"configure": ".*", "write": ".*", "read": ".*"})


def delete_vhost(settings: Settings) -> None:
    """Delete the broker URL's vhost, and every queue in it, if it exists. Raises requests.RequestException."""
    _management(settings, "DELETE", f"vhosts/{quote(settings.vhost, safe='')}", ok=(404,))


def _management(settings: Settings, method: str, path: str, *, ok: tuple[int, ...] = (), **fields: Any) -> Any:
    """One call of the management API (its credentials percent-decoded), on the first node that
    answers; raises for a status not 2xx or ``ok``."""
    *others, last = settings.rabbitmq_api_urls
    for url in others:
        try:
            return _call(url, method, path, ok, fields)
        except requests.ConnectionError:
            continue
    return _call(last, method, path, ok, fields)


def _call(url: str, method: str, path: str, ok: tuple[int, ...], fields: dict[str, Any]) -> Any:
    parts = urlsplit(url)
    base = parts._replace(netloc=(parts.hostname or "") + (f":{parts.port}" if parts.port else "")).geturl()
    response = requests.request(
        method,
        f"{base.rstrip('/')}/api/{path}",
        auth=(unquote(parts.username or "guest"), unquote(parts.password or "guest")),
        timeout=API_TIMEOUT,
        **fields,
    )
    if response.status_code not in ok:
        response.raise_for_status()
    return response


def wait_for(settings: Settings) -> None:
    """Return once RabbitMQ answers: a worker or a scheduler started before it (compose starts
    them together) waits, one warning line per attempt, instead of failing."""
    delay = 1.0
    pika_logger = logging.getLogger("pika")
    level = pika_logger.level
    pika_logger.setLevel(logging.CRITICAL)  # pika narrates each failed attempt with a traceback
    try:
        while True:
            try:
                with channel(settings, attempts=1):
                    return
            except (pika.exceptions.AMQPError, OSError) as e:
                logger.warning(
                    "RabbitMQ does not answer at %s (%s): trying again in %.0f s.",
                    redact(settings.broker_url),
                    type(e).__name__,
                    delay,
                )
                time.sleep(delay)
                delay = min(delay * 2, 30.0)
    finally:
        pika_logger.setLevel(level)


def queue_counts(settings: Settings, queues: Iterable[str]) -> tuple[list[QueueCounts], str | None]:
    """Counts for each queue, and a note when the management API could not be read (then
    unacked counts are unknown)."""
    queues = list(queues)
    names = [n for q in queues for n in (q, dq(q), xq(q))]
    ready = ready_counts(settings, names)
    note = None
    try:
        api = management_queues(settings)
    except requests.RequestException as e:
        api = {}
        note = f"management API unavailable ({type(e).__name__}): unacked counts unknown"
    rows = []
    for q in queues:
        info = api.get(q, {})
        rows.append(
            QueueCounts(
                queue=q,
                type=info.get("type"),
                ready=ready[q],
                unacked=info.get("messages_unacknowledged") if api else None,
                delayed=_total(ready[dq(q)], api.get(dq(q), {}).get("messages_unacknowledged")),
                dead=ready[xq(q)],
                consumers=info.get("consumers") if api else None,
            )
        )
    return rows, note


def _total(ready: int | None, unacked: int | None) -> int | None:
    # Delayed messages sit unacked in worker memory until due.
    if ready is None:
        return None
    return ready + (unacked or 0)


def purge(settings: Settings, queue_name: str) -> int:
    """Drop every message of one queue. Returns how many were dropped (0 if it does not exist)."""
    with channel(settings) as ch:
        try:
            return ch.queue_purge(queue_name).method.message_count
        except pika.exceptions.ChannelClosedByBroker as e:
            if e.reply_code == 404:
                return 0
            raise


def take_dead_letters(settings: Settings, queue_name: str, message_ids: set[str]) -> int:
    """Remove the messages with these ids from ``<queue>.XQ``; leave every other one in place.

    Each message is fetched unacknowledged; the ones named are acked, the rest return to the
    queue when the channel closes (so nothing is lost if this process dies half-way).
    Returns how many were removed.
    """
    removed = 0
    with channel(settings) as ch:
        try:
            total = ch.queue_declare(xq(queue_name), passive=True).method.message_count
        except pika.exceptions.ChannelClosedByBroker:
            return 0
        for _ in range(total):
            method, _properties, body = ch.basic_get(xq(queue_name), auto_ack=False)
            if method is None:
                break
            if _message_id(body) in message_ids:
                ch.basic_ack(method.delivery_tag)
                removed += 1
    return removed


def _message_id(body: bytes) -> str | None:
    try:
        return json.loads(body).get("message_id")
    except (ValueError, AttributeError):
        return None


class BatchPublisher:
    """Publishes dramatiq messages in RabbitMQ transactions: the whole batch is on disk when
    `publish` returns, for one round trip (a confirmed publish costs one per message). For a loop
    that sends many messages (the uptime scheduler); dramatiq's `send` is right for everything else.

    Parameters:
      settings(Settings): where RabbitMQ is.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.connection: pika.BlockingConnection | None = None
        self.channel: Any = None

    def publish(self, messages: Iterable[Any]) -> None:
        """Publish and commit; on a broker error, drop the connection and raise it (nothing of
        an uncommitted batch is delivered)."""
        channel = self._open()
        try:
            for message in (routed(m, self.settings.queue_type) for m in messages):
                channel.basic_publish(
                    exchange="",
                    routing_key=message.queue_name,
                    body=message.encode(),
                    properties=pika.BasicProperties(delivery_mode=2, priority=message.options.get("broker_priority")),
                )
            channel.tx_commit()
        except pika.exceptions.AMQPError:
            self.close()
            raise

    def _open(self) -> Any:
        if self.channel is None or not self.channel.is_open:
            self.close()
            self.connection = pika.BlockingConnection(parameters(self.settings))
            self.channel = self.connection.channel()
            self.channel.tx_select()
        return self.channel

    def waiting(self, queue_name: str) -> int:
        """How many messages wait in ``queue_name``, ready for a consumer (not those being processed)."""
        try:
            return int(self._open().queue_declare(queue=queue_name, passive=True).method.message_count)
        except pika.exceptions.AMQPError:
            self.close()
            raise

    def idle(self) -> None:
        """Answer RabbitMQ's heartbeats while nothing is published (a loop may send nothing for
        hours, and RabbitMQ closes a connection silent for two heartbeats); a connection that
        closed meanwhile is dropped, for the next `publish` to open a new one."""
        if self.connection is not None:
            try:
                self.connection.process_data_events(time_limit=0)
            except pika.exceptions.AMQPError:
                self.close()

    def close(self) -> None:
        if self.connection is not None and self.connection.is_open:
            try:
                self.connection.close()
            except pika.exceptions.AMQPError:
                pass
        self.connection = self.channel = None


def send_all(messages: list[Any], *, batch: int = 1000) -> None:
    """Enqueue many messages: in RabbitMQ transactions of ``batch`` on a RabbitMQ broker (one
    round trip each instead of one confirm per message), one by one on any other broker."""
    broker = dramatiq.get_broker()
    if not isinstance(broker, RabbitmqBroker) or len(messages) < 10:
        for message in messages:
            broker.enqueue(message)
        return
    publisher = BatchPublisher(get_settings())
    try:
        for start in range(0, len(messages), batch):
            publisher.publish(messages[start : start + batch])
    finally:
        publisher.close()
