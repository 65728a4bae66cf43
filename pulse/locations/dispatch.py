"""Sending the slots of components checked from several locations to their locations.

A batch of checks (`pulse.uptime.batch`) hands its components that list locations here: each
slot is noted in ``location_slot`` with the time by which its verdict is taken (`decide_by`),
then sent to each location the component lists, one sealed batch per location
(`pulse.locations.wire`) with a nonce of its own, on the location's queue; ``location_sent``
notes which slots went to which location under which nonce, and a location's result counts only
for those (`pulse.locations.verdict`). The message expires after the component's interval: a
location that was away does not check stale slots when it comes back.

Each location's batch is published on its own: one that RabbitMQ refuses (its queue full, or
gone) is one WARNING line naming the location, and the other locations' batches go on; that
location's slots are decided without it.

A redelivered batch sends its slots again, under a new nonce (they were noted already: the note
is kept); a location checking a slot twice sends two results, of which the first recorded counts.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

import dramatiq
import pika
import pika.exceptions
from dramatiq.brokers.rabbitmq import RabbitmqBroker

from pulse.config import get_settings
from pulse.db import db
from pulse.errors import PermanentError
from pulse.locations import queue, wire
from pulse.rabbitmq import arguments, dq, xq
from pulse.uptime.record import Loaded

logger = logging.getLogger(__name__)

#: Beyond its timeout, how long a slot's verdict waits for locations that have not answered
#: (their queue's wait, their start) before it is taken without them.
GRACE = timedelta(seconds=5)

#: The actor of a location's batch of checks (`actors.location.check_here`).
ACTOR = "check_here"

NOTE = """
INSERT INTO location_slot (component_id, scheduled_at, decide_by)
SELECT * FROM unnest(%(ids)s::bigint[], %(slots)s::timestamptz[], %(by)s::timestamptz[])
ON CONFLICT DO NOTHING
"""

# What goes to which location under which nonce, for the slots waiting for their verdict.
SENT = """
INSERT INTO location_sent (component_id, scheduled_at, location, nonce)
SELECT s.component_id, s.scheduled_at, w.location, w.nonce
FROM unnest(%(ids)s::bigint[], %(slots)s::timestamptz[], %(locations)s::text[], %(nonces)s::uuid[])
     AS w (id, slot, location, nonce)
JOIN location_slot s ON s.component_id = w.id AND s.scheduled_at = w.slot
ON CONFLICT DO NOTHING
"""


def decide_by(loaded: Loaded, slot: datetime) -> datetime:
    """When the slot's verdict is taken at the latest: after its timeout and `GRACE`, within its interval."""
    timeout = timedelta(seconds=loaded.stored.timeout_s if loaded.stored else 10)
    return slot + min(timeout + GRACE, timedelta(seconds=loaded.interval_s))


def send(checks: Sequence[tuple[Loaded, datetime]]) -> None:
    """Note each (component, slot) and send it to each of the component's locations."""
    if not checks:
        return
    secret = get_settings().locations_secret
    if not secret:
        raise PermanentError(
            "components are checked from locations but PULSE_LOCATIONS_SECRET is not set: set it (at least 32 "
            "random characters) where the central workers run, and give each location its key "
            "(`pulse locations key NAME`)"
        )
    by_location: dict[str, list[wire.Check]] = defaultdict(list)
    expires: dict[str, int] = {}
    for loaded, slot in checks:
        assert loaded.stored is not None
        check = wire.Check(loaded.component.id, slot, loaded.kind, loaded.stored, loaded.conditions)
        for location in loaded.locations:
            by_location[location].append(check)
            expires[location] = max(expires.get(location, 0), loaded.interval_s * 1000)
    batches = {location: wire.Batch(wire.nonce(), located) for location, located in by_location.items()}
    sent = [(location, batch.nonce, c) for location, batch in batches.items() for c in batch.checks]
    with db.atomic():
        db.execute_sql(
            NOTE,
            {
                "ids": [loaded.component.id for loaded, _ in checks],
                "slots": [slot for _, slot in checks],
                "by": [decide_by(loaded, slot) for loaded, slot in checks],
            },
        )
        db.execute_sql(
            SENT,
            {
                "ids": [c.component_id for _, _, c in sent],
                "slots": [c.slot for _, _, c in sent],
                "locations": [location for location, _, _ in sent],
                "nonces": [nonce for _, nonce, _ in sent],
            },
        )
    for location, batch in batches.items():
        try:
            _publish(location, wire.seal(batch, wire.key(secret, location)), expires[location])
        except pika.exceptions.AMQPChannelError as e:
            logger.warning(
                "Location %s: RabbitMQ refused its batch of %d checks (%s): its slots are decided without it; "
                "the other locations' batches go on.",
                location,
                len(batch.checks),
                e,
            )


def _publish(location: str, sealed: str, expires_ms: int) -> None:
    broker = dramatiq.get_broker()
    message: dramatiq.Message = dramatiq.Message(
        queue_name=queue(location), actor_name=ACTOR, args=(sealed,), kwargs={}, options={}
    )
    if not isinstance(broker, RabbitmqBroker):  # the StubBroker of unit tests
        broker.declare_queue(message.queue_name)
        broker.enqueue(message)
        return
    channel = broker.channel
    try:
        with _lock:
            known = (id(channel), location) in _declared
        if not known:
            declare(channel, location, get_settings().queue_type)
            with _lock:
                _declared.add((id(channel), location))
        channel.basic_publish(
            exchange="",
            routing_key=message.queue_name,
            body=message.encode(),
            properties=pika.BasicProperties(delivery_mode=2, expiration=str(expires_ms)),
        )
    finally:
        if channel.is_closed:  # RabbitMQ closed it: the next location's batch goes on a new one
            del broker.channel
            with _lock:  # whose id a new channel may take
                _declared.difference_update({known for known in _declared if known[0] == id(channel)})


_declared: set[tuple[int, str]] = set()
_lock = threading.Lock()


def declare(channel: pika.adapters.blocking_connection.BlockingChannel, location: str, queue_type: str) -> None:
    """Make the location's queue (with its ``.DQ`` and ``.XQ``) exist: its messages wait there
    until its workers come, and its user may not create it with the dead-letter routing it needs
    (`pulse locations add` makes it ahead; the first batch sent there does otherwise)."""
    for name in (queue(location), dq(queue(location)), xq(queue(location))):
        channel.queue_declare(name, durable=True, arguments=arguments(name, queue_type))
