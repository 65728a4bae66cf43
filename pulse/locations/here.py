"""A location's side: check a sealed batch (`pulse.locations.wire`) and send the results back to
the `RESULTS` exchange, with the location's name as routing key. No database."""

from __future__ import annotations

import functools

import dramatiq
import pika
from dramatiq.brokers.rabbitmq import RabbitmqBroker

from pulse import rabbitmq
from pulse.config import Settings, parse_canaries
from pulse.locations import RECORDED_ON, RESULTS, RESULTS_ACTOR, canaries, queue, wire
from pulse.rabbitmq import admin
from pulse.uptime import batch as checking


def check(sealed: str, settings: Settings) -> tuple[str, list[wire.Result]]:
    """Make each check of the batch at once; the batch's nonce and what each check found. When one
    failed and none of the location's canaries answers, the failed ones abstain
    (`pulse.locations.canaries`)."""
    batch = wire.unseal(sealed, settings.location_key)
    found = checking.run_all([(c, c.slot) for c in batch.checks])
    abstain = not all(result.success for result in found) and not _egress(settings).ok()
    return batch.nonce, [
        wire.Result(
            component_id=c.component_id,
            slot=c.slot,
            started_at=result.started_at,
            seen=result.seen,
            reason=None if result.success else wire.one_line(result.reason),
            response_time_ms=round(result.response.response_time_ms),
            status_code=result.response.status,
            abstained=abstain and not result.success,
        )
        for c, result in zip(batch.checks, found, strict=True)
    ]


@functools.cache
def _egress(settings: Settings) -> canaries.Egress:
    return canaries.Egress(parse_canaries(settings.location_canaries), settings.location)


def send_back(nonce: str, results: list[wire.Result], settings: Settings) -> None:
    """Publish the results of the batch ``nonce`` for the central workers to record (confirmed:
    the batch's message is acked only once RabbitMQ has them)."""
    message: dramatiq.Message = dramatiq.Message(
        queue_name=RECORDED_ON,
        actor_name=RESULTS_ACTOR,
        args=(settings.location, nonce, [r.as_json() for r in results]),
        kwargs={},
        options={},
    )
    broker = dramatiq.get_broker()
    if not isinstance(broker, RabbitmqBroker):  # the StubBroker of unit tests
        broker.enqueue(message)
        return
    broker.channel.basic_publish(
        exchange=RESULTS,
        routing_key=settings.location,
        body=message.encode(),
        properties=pika.BasicProperties(delivery_mode=2),
        mandatory=True,
    )


def await_queue(settings: Settings) -> None:
    """Return once the location's queue exists: a location's worker declares nothing (its user
    may not create a queue that dead-letters): `pulse locations add` makes its queue, or the
    central workers when they first send it checks. One warning line per attempt, at a growing
    interval (dramatiq shows a worker process's lines once it has booted, or after its
    ``--worker-fork-timeout``, 30 s)."""
    name = queue(settings.location)

    def attempt() -> str | None:
        if admin.ready_counts(settings, [name])[name] is not None:
            return None
        return (
            f"{name} does not exist yet: `pulse locations add {settings.location}` makes it (where the central "
            "workers run), as do the central workers when they first send this location checks"
        )

    rabbitmq.retry(attempt)
