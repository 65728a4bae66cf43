"""The telemetry middleware: Pulse's own Prometheus metrics of every message, beside dramatiq's.

Each worker process writes its samples to prometheus-client's multiprocess directory; one extra
process (a dramatiq "fork", `pulse.exporter.serve`) serves the sum of them all, with the gauges read
at scrape time. The directory belongs to one run of ``dramatiq`` (named after its main process,
`pulse.runs`), so a restart starts from clean files (an in-place restart of the worker processes too:
the files of processes that are gone are removed); directories of runs that are gone are removed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import dramatiq

from pulse import logging as pulse_logging
from pulse.config import Settings, get_settings
from pulse.runs import remove_dead_processes, remove_stale_directories, run_directory
from pulse.telemetry import counters

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


class Telemetry(Prometheus):
    """dramatiq's Prometheus metrics plus `worker_processing_seconds`,
    `worker_task_success_total`, `worker_task_failure_total`, `worker_task_dlq_total` (its fork
    serves them with what is read at scrape time: `pulse.telemetry.server`). The success and
    failure counters carry the message's `queue_name` beside the `task_name` operators alert on:
    the stalled-queue alert and `pulse queues` count successes per queue.

    The per-message hooks are dramatiq's, rewritten to label each series once rather than on every
    message. It counts only in processes booted by ``dramatiq`` (with a multiprocess directory); elsewhere
    (the scheduler, the CLI, tests on a StubBroker) its hooks only time each message, for its log line.

    Parameters:
      settings(Settings): gives the metrics directory.
      serve(Callable): the fork serving the telemetry, a module-level function (dramatiq imports it by name).
    """

    def __init__(self, *, settings: Settings, serve: Callable[[], int]) -> None:
        super().__init__()
        self.settings = settings
        self.serve = serve
        self.booted = False
        self.started: dict[str, float] = {}
        self.series: dict[tuple[str, str], _Series] = {}

    @property
    def forks(self) -> list[Any]:
        return [self.serve]

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
        counters.create(registry)
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
