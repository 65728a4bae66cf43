"""What ``dramatiq pulse.actors`` and ``periodiq pulse.actors`` run on: the broker
(`pulse.rabbitmq.broker`) with Pulse's middleware in order, given whether a queue is paused
(`pulse.pause`), its queues declared.

``PULSE_BROKER_URL=stub://`` swaps in dramatiq's StubBroker (same middleware) for unit tests.
"""

from __future__ import annotations

import functools

import dramatiq
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import CurrentMessage
from periodiq import PeriodiqMiddleware

from pulse import exporter, pause
from pulse.config import Settings, get_settings
from pulse.encoder import Encoder
from pulse.locations import here
from pulse.middleware.beat import Beat
from pulse.middleware.database import Database
from pulse.middleware.dead_letters import DeadLetters
from pulse.middleware.lifecycle import Lifecycle
from pulse.middleware.log_context import LogContext
from pulse.middleware.loops import Loops
from pulse.middleware.orphans import Orphans
from pulse.middleware.recycling import Recycling
from pulse.middleware.retries import Retries
from pulse.middleware.time_limit import TimeLimit
from pulse.middleware.watchdog import Watchdog
from pulse.rabbitmq import amqp_url, queue_names, queues
from pulse.rabbitmq.broker import LocationBroker, PulseBroker
from pulse.telemetry.middleware import Telemetry

__all__ = ["build_broker", "build_middleware", "setup_broker"]


def build_middleware(settings: Settings) -> list[dramatiq.Middleware]:
    """Pulse's middleware, in order: `before_*` hooks run top down, `after_*` hooks bottom up.

    Of dramatiq's defaults, only what Pulse uses is here: every middleware costs each message a
    call per hook, used or not (docs/performance.md).
    Left out: Callbacks and Pipelines (Pulse chains work through the database: claim, then send),
    AgeLimit (no actor sets ``max_age``) and ShutdownNotifications (no actor asks to be
    interrupted at shutdown; a stopping worker lets messages in flight finish). CurrentMessage
    lets `send` name its claim.
    """
    if settings.location:
        return location_middleware(settings)
    return [
        Database(settings=settings),
        LogContext(),
        CurrentMessage(),
        Telemetry(settings=settings, serve=exporter.serve),
        *_bounds(settings),
        Retries(max_retries=settings.max_retries),
        PeriodiqMiddleware(skip_delay=30),
        DeadLetters(),
        Lifecycle(settings=settings, prepare=functools.partial(queues.declare, settings)),
        Loops(settings=settings),
        Orphans(),  # last: every other middleware has begun the message it skips
    ]


def location_middleware(settings: Settings) -> list[dramatiq.Middleware]:
    """A location's worker's middleware: no database (no dead-letter records, no loops), no
    queues declared but its own (RabbitMQ's permissions may allow no other), no telemetry of
    queues it may not read."""
    return [
        LogContext(),
        CurrentMessage(),
        *_bounds(settings),
        Retries(max_retries=0),
        Lifecycle(settings=settings, prepare=functools.partial(here.await_queue, settings)),  # declares nothing
        Orphans(),
    ]


def _bounds(settings: Settings) -> list[dramatiq.Middleware]:
    """What bounds every worker process, central or a location's: the time limit and its
    watchdog, recycling, and the heartbeat `pulse health` reads."""
    return [
        TimeLimit(time_limit=settings.time_limit_s * 1000),
        Watchdog(settings=settings, time_limit=settings.time_limit_s * 1000, grace_s=settings.time_limit_grace_s),
        Recycling(
            settings=settings,
            max_messages=settings.max_messages_per_process,
            max_memory=settings.max_memory_per_process_mib,
        ),
        Beat(settings=settings),
    ]


def build_broker(settings: Settings) -> dramatiq.Broker:
    """A broker with Pulse's middleware and queues."""
    dramatiq.set_encoder(Encoder())
    middleware = build_middleware(settings)
    broker: dramatiq.Broker
    if settings.broker_url.startswith("stub:"):
        broker = StubBroker(middleware=middleware)
    else:
        broker = (LocationBroker if settings.location else PulseBroker)(
            queue_type=settings.queue_type,
            paused=pause.is_paused,
            url=[amqp_url(url) for url in settings.broker_urls],
            confirm_delivery=True,
            middleware=middleware,
        )
    if not settings.location:
        for queue_name in queue_names(settings.queue_type):
            broker.declare_queue(queue_name)
    return broker


def setup_broker(settings: Settings | None = None) -> dramatiq.Broker:
    """Build the broker and make it dramatiq's global broker, once per process."""
    global _broker
    if _broker is None:
        _broker = build_broker(settings or get_settings())
        dramatiq.set_broker(_broker)
    return _broker


_broker: dramatiq.Broker | None = None
