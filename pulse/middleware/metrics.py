"""Prometheus metrics of the workers: Pulse's own beside dramatiq's, on ``PULSE_METRICS_PORT``.

Each worker process writes its samples to prometheus-client's multiprocess directory; one extra
process (a dramatiq "fork") serves the sum of them all, plus the queue depths read from RabbitMQ
at scrape time. The directory belongs to one run of ``dramatiq`` (named after its main process,
`pulse.runs`), so a restart starts from clean files (an in-place restart of the worker processes too:
the files of processes that are gone are removed); directories of runs that are gone are removed.
"""

from __future__ import annotations

import logging
import os
import time
from http.server import HTTPServer
from typing import Any, NamedTuple

import dramatiq

from pulse import logging as pulse_logging
from pulse.config import Settings, get_settings
from pulse.runs import remove_dead_processes, remove_stale_directories, run_directory

logger = logging.getLogger(__name__)

BUCKETS = (0.1, 0.5, 1, 5, 10, 30, 60, 300)


class _Series(NamedTuple):
    """The labelled series one message updates, made once per (queue, actor): `labels()` is slow."""

    inprogress: Any
    durations: Any
    total: Any
    errors: Any
    processing: Any
    successes: Any


# dramatiq's Prometheus middleware reads its directory from the environment when first imported.
os.environ["dramatiq_prom_db"] = run_directory(get_settings().metrics_dir)
from dramatiq.middleware.prometheus import Prometheus  # noqa: E402


class Metrics(Prometheus):
    """dramatiq's Prometheus metrics plus `worker_processing_seconds`,
    `worker_task_success_total`, `worker_task_failure_total`, `worker_task_dlq_total`
    (and `worker_queue_depth`, `worker_dead_letters` computed at scrape time). The success and
    failure counters carry the message's `queue_name` beside the `task_name` operators alert on:
    the stalled-queue alert and `pulse queues` count successes per queue.

    The per-message hooks are dramatiq's, rewritten to label each series once rather than on every
    message. It counts only in processes booted by ``dramatiq`` (with a multiprocess directory); elsewhere
    (the scheduler, the CLI, tests on a StubBroker) its hooks only time each message, for its log line.

    Parameters:
      settings(Settings): gives the metrics directory.
    """

    def __init__(self, *, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
        self.booted = False
        self.started: dict[str, float] = {}
        self.series: dict[tuple[str, str], _Series] = {}

    @property
    def forks(self) -> list[Any]:
        return [serve]

    def after_process_boot(self, broker: dramatiq.Broker) -> None:
        base = self.settings.metrics_dir
        os.makedirs(base, exist_ok=True)
        remove_stale_directories(base)
        os.makedirs(run_directory(base), exist_ok=True)
        remove_dead_processes(run_directory(base))
        super().after_process_boot(broker)  # sets PROMETHEUS_MULTIPROC_DIR before importing the client
        import prometheus_client as prom

        registry = prom.CollectorRegistry()
        self.processing = prom.Histogram(
            "worker_processing_seconds",
            "Time spent processing a message, by actor.",
            ["task_name"],
            buckets=BUCKETS,
            registry=registry,
        )
        self.successes = prom.Counter(
            "worker_task_success", "Messages processed successfully.", ["task_name", "queue_name"], registry=registry
        )
        self.failures = prom.Counter(
            "worker_task_failure",
            "Failed attempts, by exception type.",
            ["task_name", "queue_name", "error_type"],
            registry=registry,
        )
        self.dead = prom.Counter(
            "worker_task_dlq", "Messages dead-lettered after their last attempt.", ["task_name"], registry=registry
        )
        global _deleted, _skipped
        _deleted = prom.Counter(
            "cleanup_rows_deleted", "Rows the cleanup deleted, by table.", ["table"], registry=registry
        )
        _skipped = prom.Counter(
            "loop_slots_skipped",
            "Slots a loop claimed but did not send, its queue over PULSE_BACKLOG_BOUND, by loop.",
            ["loop"],
            registry=registry,
        )
        self.booted = True

    def _series(self, message: Any) -> _Series:
        key = (message.queue_name, message.actor_name)
        series = self.series.get(key)
        if series is None:
            series = self.series[key] = _Series(
                inprogress=self.inprogress_messages.labels(*key),
                durations=self.message_durations.labels(*key),
                total=self.total_messages.labels(*key),
                errors=self.total_errored_messages.labels(*key),
                processing=self.processing.labels(message.actor_name),
                successes=self.successes.labels(message.actor_name, message.queue_name),
            )
        return series

    def before_process_message(self, broker: dramatiq.Broker, message: Any) -> None:
        message_id = message.message_id
        self.started[message_id] = time.perf_counter()  # for the completed line too (`LogContext`)
        if not self.booted:
            return
        if message_id in self.delayed_messages:
            self.delayed_messages.remove(message_id)
            self.inprogress_delayed_messages.labels(message.queue_name, message.actor_name).dec()
        self._series(message).inprogress.inc()

    def after_process_message(
        self, broker: dramatiq.Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        elapsed = self._elapsed(message)
        if not self.booted:
            return
        series = self._finish(message, elapsed)
        if exception is None:
            series.successes.inc()
        else:
            series.errors.inc()
            self.failures.labels(message.actor_name, message.queue_name, type(exception).__name__).inc()

    def after_skip_message(self, broker: dramatiq.Broker, message: Any, **_: Any) -> None:
        elapsed = self._elapsed(message)
        if self.booted:
            self._finish(message, elapsed)

    def _elapsed(self, message: Any) -> float | None:
        """Seconds since ``message`` began; its log context gets them as ``durationMs``, for the
        completed line `LogContext` writes next."""
        started = self.started.pop(message.message_id, None)
        if started is None:
            return None
        elapsed = time.perf_counter() - started
        pulse_logging.bind(durationMs=round(elapsed * 1000))
        return elapsed

    def _finish(self, message: Any, elapsed: float | None) -> _Series:
        series = self._series(message)
        series.total.inc()
        if elapsed is not None:
            series.inprogress.dec()
            series.durations.observe(elapsed * 1000)
            series.processing.observe(elapsed)
        return series

    def after_nack(self, broker: dramatiq.Broker, message: Any) -> None:
        if self.booted:
            super().after_nack(broker, message)
            self.dead.labels(message.actor_name).inc()

    def after_enqueue(self, broker: dramatiq.Broker, message: Any, delay: int) -> None:
        if self.booted:
            super().after_enqueue(broker, message, delay)

    def before_delay_message(self, broker: dramatiq.Broker, message: Any) -> None:
        if self.booted:
            super().before_delay_message(broker, message)

    def after_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        if self.booted:
            super().after_worker_shutdown(broker, worker)


_deleted: Any = None  # cleanup_rows_deleted_total, once a worker process has booted
_skipped: Any = None  # loop_slots_skipped_total, likewise


def rows_deleted(table: str, rows: int) -> None:
    """Count rows the cleanup deleted from ``table`` (in a worker process; elsewhere, nothing)."""
    if _deleted is not None:
        _deleted.labels(table).inc(rows)


def slots_skipped(loop: str, slots: int) -> None:
    """Count slots ``loop`` skipped (in a worker process; elsewhere, nothing)."""
    if _skipped is not None:
        _skipped.labels(loop).inc(slots)


class QueueDepth:
    """A collector reading, at each scrape, the messages waiting in each queue and its `.XQ`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def collect(self) -> Any:
        from prometheus_client.core import GaugeMetricFamily

        from pulse.rabbitmq import queue_names, ready_counts, xq

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


class FromDatabase:
    """A collector of gauges read from PostgreSQL at each scrape, the same on every worker
    (aggregate them with max); nothing is reported when PostgreSQL does not answer:

    - ``oncall_escalations_overdue``: on-call escalations overdue by more than a minute (`pulse.oncall.due`);
    - ``cleanup_last_success_timestamp_seconds``: when the last cleanup succeeded (none before the first);
    - ``rollup_lag_seconds{kind}``: how far each kind's rollups are behind now (`pulse.cleanup.rollups`).
    """

    QUERY = """
        SELECT ({overdue}),
               (SELECT extract(epoch FROM max(finished_at)) FROM cleanup_run WHERE succeeded),
               (SELECT json_object_agg(kind, extract(epoch FROM now() - watermark)) FROM rollup_state
                WHERE watermark IS NOT NULL)
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def collect(self) -> Any:
        import psycopg
        from prometheus_client.core import GaugeMetricFamily

        from pulse.db import CONNECT_TIMEOUT
        from pulse.oncall.due import OVERDUE_COUNT

        try:
            with psycopg.connect(self.settings.database_url, connect_timeout=CONNECT_TIMEOUT, autocommit=True) as conn:
                row = conn.execute(self.QUERY.format(overdue=OVERDUE_COUNT)).fetchone()
        except psycopg.Error as e:  # an unmigrated database, or PostgreSQL down: its own alerts say so
            logger.warning("Could not read the gauges kept in PostgreSQL: %s", type(e).__name__)
            return
        overdue_count, last_success, lags = row or (0, None, None)
        overdue = GaugeMetricFamily(
            "oncall_escalations_overdue", "On-call escalations still not done a minute after their time."
        )
        overdue.add_metric([], overdue_count or 0)
        yield overdue
        if last_success is not None:
            success = GaugeMetricFamily(
                "cleanup_last_success_timestamp_seconds", "When the last cleanup succeeded (Unix time)."
            )
            success.add_metric([], float(last_success))
            yield success
        lag = GaugeMetricFamily("rollup_lag_seconds", "How far behind now each kind's rollups are.", labels=["kind"])
        for kind, seconds in sorted((lags or {}).items()):
            lag.add_metric([kind], float(seconds))
        yield lag


def serve() -> int:
    """Serve the metrics of every worker process of this run (runs in a dramatiq fork process)."""
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
