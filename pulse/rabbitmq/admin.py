"""Direct operations on RabbitMQ for operators and tests: counts, purges, taking messages out of a
`.XQ`, vhosts.

Counts over AMQP (a passive declare) are exact but know only ready messages; the management API
also knows unacked ones but samples every few seconds.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pika
import pika.exceptions
import requests

from pulse.config import Settings
from pulse.rabbitmq import channel, dq, xq

API_TIMEOUT = 5  # seconds of the management API's answer


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
