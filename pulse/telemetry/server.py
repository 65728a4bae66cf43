"""The telemetry endpoint on ``PULSE_METRICS_PORT``: the samples every worker process of this run
wrote to its multiprocess directory, summed, with the queue depths and the registered gauges read
at scrape time. A dramatiq fork runs it (`pulse.exporter.serve`, which registers the gauges first).
"""

from __future__ import annotations

import logging
import os
from http.server import HTTPServer
from typing import Any

from pulse.config import get_settings
from pulse.runs import run_directory
from pulse.telemetry.gauges import FromDatabase
from pulse.telemetry.queues import QueueDepth

logger = logging.getLogger(__name__)


def serve() -> int:
    """Serve the telemetry of every worker process of this run, until the process is stopped."""
    from prometheus_client import CollectorRegistry, MetricsHandler
    from prometheus_client.multiprocess import MultiProcessCollector

    settings = get_settings()
    directory = run_directory(settings.metrics_dir)
    os.makedirs(directory, exist_ok=True)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=directory)
    registry.register(QueueDepth(settings))
    registry.register(FromDatabase(settings))

    class Handler(MetricsHandler.factory(registry)):  # type: ignore[misc]
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - one line per scrape is noise
            pass

    try:
        server = HTTPServer(("0.0.0.0", settings.metrics_port), Handler)
    except OSError as e:  # the workers still run; say why there are no metrics, without a traceback
        logger.error("Metrics not served: port %d: %s (set PULSE_METRICS_PORT).", settings.metrics_port, e.strerror)
        return 1
    logger.info("Serving metrics on port %d.", settings.metrics_port)
    server.serve_forever()
    return 0
