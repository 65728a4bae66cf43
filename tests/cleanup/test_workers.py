"""The cleanup queue on a real worker: rollup passes and the daily cleanup, through RabbitMQ."""

from __future__ import annotations

from datetime import timedelta

from actors.cleanup import cleanup, rollup
from pulse.models import CleanupRun, ComponentRollup, FailedMessage, UptimeCheck, utcnow
from schedules import cleanup as ticks
from tests.cleanup.conftest import add_checks
from tests.support.wait import wait_for
from tests.support.worker import free_port, metric


def test_the_ticks_are_daily_at_midnight_and_every_five_minutes():
    assert (str(ticks.cleanup_tick.options["periodic"]), ticks.cleanup_tick.queue_name) == ("0 0 * * *", "cleanup")
    assert (str(ticks.rollup_tick.options["periodic"]), ticks.rollup_tick.queue_name) == ("*/5 * * * *", "cleanup")


def test_a_worker_rolls_up_cleans_up_and_counts_what_it_deleted(workers, component):
    port = free_port()
    workers("--queues", "cleanup", env={"PULSE_METRICS_PORT": str(port)})
    api = component()
    now = utcnow()
    old = now - timedelta(days=200)
    add_checks(
        api.id,
        [(old, old, "OPERATIONAL", 5), (now - timedelta(minutes=3), now - timedelta(minutes=2), "OPERATIONAL", 7)],
    )
    FailedMessage.create(message_id="m", queue_name="uptime", actor_name="check", error_type="E", error_message="",
                         traceback="", failed_at=now - timedelta(days=31))  # fmt: skip

    rollup.send()
    hour = wait_for(
        lambda: ComponentRollup.get_or_none(ComponentRollup.period == "hour"), "the rollup of the new check"
    )
    assert (hour.checks, hour.max_ms) == (1, 7)

    cleanup.send()
    run = wait_for(lambda: CleanupRun.get_or_none(CleanupRun.succeeded), "the cleanup to succeed", timeout=60)
    assert run.deleted == {"uptime_check": 1, "failed_message": 1}
    assert [c.scheduled_at for c in UptimeCheck.select()] == [now - timedelta(minutes=3)]
    assert FailedMessage.select().count() == 0
    assert wait_for(lambda: metric(port, "cleanup_rows_deleted_total", table="uptime_check"), "the counter") == 1
    assert metric(port, "cleanup_rows_deleted_total", table="failed_message") == 1
    assert metric(port, "cleanup_last_success_timestamp_seconds") == run.finished_at.timestamp()
    assert metric(port, "rollup_lag_seconds", kind="uptime") < 3600
