"""Counters any module of a worker process adds to: rows the cleanup deleted, slots a loop
skipped. They count in a worker process booted by ``dramatiq``, once the telemetry middleware has
created them; elsewhere (the scheduler, the CLI, tests on a StubBroker) adding to them does nothing.
"""

from __future__ import annotations

from typing import Any

_deleted: Any = None  # cleanup_rows_deleted_total
_skipped: Any = None  # loop_slots_skipped_total


def create(registry: Any) -> None:
    """Create the counters in ``registry`` (prometheus-client having its multiprocess directory)."""
    import prometheus_client as prom

    global _deleted, _skipped
    _deleted = prom.Counter("cleanup_rows_deleted", "Rows the cleanup deleted, by table.", ["table"], registry=registry)
    _skipped = prom.Counter(
        "loop_slots_skipped",
        "Slots a loop claimed but did not send, its queue over PULSE_BACKLOG_BOUND, by loop.",
        ["loop"],
        registry=registry,
    )


def rows_deleted(table: str, rows: int) -> None:
    """Count rows the cleanup deleted from ``table``."""
    if _deleted is not None:
        _deleted.labels(table).inc(rows)


def slots_skipped(loop: str, slots: int) -> None:
    """Count slots ``loop`` skipped."""
    if _skipped is not None:
        _skipped.labels(loop).inc(slots)
