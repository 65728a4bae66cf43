"""The queue depths, read from RabbitMQ at each scrape (the same on every worker: aggregate them with max)."""

from __future__ import annotations

import logging
from typing import Any

from pulse.config import Settings

logger = logging.getLogger(__name__)


class QueueDepth:
    """A collector reading, at each scrape, the messages waiting in each queue and its `.XQ`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def collect(self) -> Any:
        from prometheus_client.core import GaugeMetricFamily

        from pulse.rabbitmq import queue_names, xq
        from pulse.rabbitmq.admin import ready_counts

        up = GaugeMetricFamily("worker_broker_up", "1 if RabbitMQ answered the last scrape.")
        try:
            # One connection attempt: the scrape answers within a socket timeout (5 s), well inside
            # Prometheus's scrape timeout, even when RabbitMQ's host does not answer at all.
            names = queue_names(self.settings.queue_type)
            counts = ready_counts(self.settings, [n for q in names for n in (q, xq(q))], attempts=1)
        except Exception as e:  # noqa: BLE001 - a scrape must answer, with the broker marked down
            logger.warning("Could not read queue depths: %s", type(e).__name__)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        depth = GaugeMetricFamily("worker_queue_depth", "Messages ready in the queue.", labels=["queue_name"])
        dead = GaugeMetricFamily("worker_dead_letters", "Messages in the queue's .XQ.", labels=["queue_name"])
        for q in names:
            depth.add_metric([q], counts[q] or 0)
            dead.add_metric([q], counts[xq(q)] or 0)
        yield depth
        yield dead
