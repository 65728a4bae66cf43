"""The cleanup queue's work: the daily cleanup, and the rollups every few minutes."""

from __future__ import annotations

import logging
from datetime import timedelta

import dramatiq

from pulse.cleanup import partitions, rollups
from pulse.cleanup import run as cleanup_run
from pulse.config import get_settings
from pulse.models import utcnow
from pulse.telemetry.counters import rows_deleted

logger = logging.getLogger(__name__)

ROLLUP_BUDGET_S = 200.0  # seconds a rollup pass works, shared by the kinds


@dramatiq.actor(queue_name="cleanup", time_limit=900_000, max_retries=3)
def cleanup(run_id: int | None = None) -> None:
    """Clean up (`pulse.cleanup.run`) for up to 10 minutes; a run not finished by then goes on in
    a new message, under the same ``run_id``."""
    step = cleanup_run.run(
        dead_letters=timedelta(days=get_settings().dead_letter_retention_days), run_id=run_id, deleted=rows_deleted
    )
    if not step.finished:
        cleanup.send(step.run_id)


@dramatiq.actor(queue_name="cleanup", time_limit=300_000, max_retries=0)
def rollup() -> None:
    """Bring every kind's rollups up to date (a backfill goes on in the next pass), make the
    coming days' partitions and summarize the BRIN ranges of the days that are over."""
    now = utcnow()
    for table in partitions.TABLES:
        partitions.ensure(table, now)
    for kind in rollups.KINDS:
        partitions.summarize(kind.raw, kind.recorded, now)
        progress = rollups.catch_up(kind, budget_s=ROLLUP_BUDGET_S / len(rollups.KINDS))
        if progress.steps and not progress.caught_up:
            logger.info(
                "Rollups of %s: %d step(s), up to %s; the next pass goes on.",
                kind.name, progress.steps, progress.watermark,
            )  # fmt: skip
