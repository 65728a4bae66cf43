"""One cleanup: the rollups brought up to date, the partitions of the coming days made, then
everything past its retention deleted (`pulse.cleanup.retention`), recorded in ``cleanup_run``.

A run that its time budget stops is carried on by another message with the same run id
(`actors.cleanup`); a run that finds another one going leaves the work to it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from peewee import fn

from pulse.cleanup import partitions, retention, rollups
from pulse.db import db
from pulse.models import CleanupRun, utcnow

logger = logging.getLogger(__name__)

BUDGET_S = 600.0  # seconds of work per message
ROLLUP_BUDGET_S = 120.0  # of which, at most, bringing the rollups up to date


@dataclasses.dataclass
class Step:
    """What one message of a cleanup run did: its run, what it deleted and how long it took."""

    run_id: int | None
    report: retention.Report | None  # None: another cleanup was running
    seconds: float = 0.0

    @property
    def finished(self) -> bool:
        return self.report is None or self.report.finished


def prepare(now: datetime, budget_s: float) -> None:
    """What must come before deleting: the coming days' partitions, and the rollups up to date
    (retention never deletes a row the rollups do not hold yet)."""
    for table in partitions.TABLES:
        partitions.ensure(table, now)
    for kind in rollups.KINDS:
        rollups.catch_up(kind, budget_s=budget_s / len(rollups.KINDS))


def run(
    *,
    dead_letters: timedelta,
    run_id: int | None = None,
    now: datetime | None = None,
    budget_s: float = BUDGET_S,
    deleted: Callable[[str, int], object] | None = None,
) -> Step:
    """Clean up for at most ``budget_s`` seconds, as run ``run_id`` (None: a new one)."""
    started = utcnow()
    with retention.exclusive() as alone:
        if not alone:
            logger.info("Cleanup: another cleanup is running; this one leaves the work to it.")
            return Step(run_id, None)
        if run_id is None or CleanupRun.get_or_none(CleanupRun.id == run_id) is None:
            run_id = CleanupRun.create(started_at=started).id
        try:
            prepare(now or utcnow(), min(ROLLUP_BUDGET_S, budget_s / 2))
            report = retention.clean(
                now or utcnow(),
                dead_letters=dead_letters,
                budget_s=budget_s - (utcnow() - started).total_seconds(),
                deleted=deleted,
            )
        except Exception as e:
            CleanupRun.update(error=(str(e).strip().splitlines() or [type(e).__name__])[0][:300]).where(
                CleanupRun.id == run_id
            ).execute()
            raise
        _record(run_id, report)
    seconds = (utcnow() - started).total_seconds()
    counts = ", ".join(f"{f.table} {f.rows}" for f in report.tables if f.rows)
    held = "; ".join(f.held for f in report.tables if f.held)
    logger.info(
        "Cleanup %s %s in %.1f s: %s deleted%s.",
        run_id,
        "finished" if report.finished else "paused (its time is up; it goes on in the next message)",
        seconds,
        counts or "nothing",
        f"; kept for now: {held}" if held else "",
    )
    return Step(run_id, report, seconds)


def _record(run_id: int, report: retention.Report) -> None:
    """Add this message's counts to the run's, and close it when it is finished."""
    counts = {f.table: f.rows for f in report.tables if f.rows}
    with db.atomic():
        row = CleanupRun.select().where(CleanupRun.id == run_id).for_update().get()
        total = dict(row.deleted)
        for table, rows in counts.items():
            total[table] = total.get(table, 0) + rows
        update: dict[Any, Any] = {CleanupRun.deleted: total, CleanupRun.error: None}
        if report.finished:
            update.update({CleanupRun.finished_at: utcnow(), CleanupRun.succeeded: True})
        CleanupRun.update(update).where(CleanupRun.id == run_id).execute()


def last_success() -> datetime | None:
    """When the last cleanup finished successfully."""
    return CleanupRun.select(fn.max(CleanupRun.finished_at)).where(CleanupRun.succeeded).scalar()
