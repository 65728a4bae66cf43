"""Migration 0018: heartbeat monitors take a cron expression and a time zone beside the period, one
of the two; the start of a run that finished is cleared, and a run in progress must finish within
the grace; and back, without the monitors on cron."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import peewee
import pytest
from playhouse.migrations import Runner

from pulse.db import MIGRATIONS_DIR, db
from tests.support.migrations import database_at

BEFORE = "0016_heartbeats"  # the last before this one that touches heartbeat monitors
MIGRATION = "0018_heartbeat_cron"
PING = datetime(2025, 1, 10, 12, tzinfo=UTC)
COMPONENT = "INSERT INTO component (organization_id, key, name, type) VALUES (1, %s, 'x', 'HEARTBEAT')"
MONITOR = (
    "INSERT INTO heartbeat_monitor (component_id, token_sha256, period_seconds, grace_seconds, last_ping_at,"
    " last_start_at, deadline_at) VALUES (%s, %s, 3600, 600, %s, %s, %s)"
)


@pytest.fixture
def old_database(settings):
    with database_at(settings, BEFORE, "_heartbeat_cron") as database:
        yield database


def test_monitors_take_a_cron_expression_and_runs_in_progress_a_deadline_and_back(old_database):
    db.execute_sql("INSERT INTO organization (slug, name) VALUES ('acme', 'Acme')")
    for key in ("finished", "running", "cron"):
        db.execute_sql(COMPONENT, (key,))
    deadline = PING + timedelta(seconds=4200)
    db.execute_sql(MONITOR, (1, b"1" * 32, PING, PING - timedelta(minutes=1), deadline))  # started, then pinged
    db.execute_sql(MONITOR, (2, b"2" * 32, PING, PING + timedelta(minutes=1), deadline))  # started since the ping
    db.execute_sql(MONITOR, (3, b"3" * 32, None, None, None))
    runner = Runner(old_database, MIGRATIONS_DIR)

    assert runner.up(MIGRATION)[-1] == MIGRATION
    columns = "last_start_at, deadline_at, period_seconds, cron, time_zone"
    rows = db.execute_sql(f"SELECT {columns} FROM heartbeat_monitor ORDER BY component_id").fetchall()
    assert rows == [
        (None, deadline, 3600, None, "UTC"),
        (PING + timedelta(minutes=1), PING + timedelta(minutes=11), 3600, None, "UTC"),  # within the grace
        (None, None, 3600, None, "UTC"),
    ]
    db.execute_sql("UPDATE heartbeat_monitor SET period_seconds = NULL, cron = '0 3 * * *' WHERE component_id = 3")
    for both_or_neither in ("period_seconds = 60, cron = '0 3 * * *'", "period_seconds = NULL, cron = NULL"):
        with pytest.raises(peewee.IntegrityError), db.atomic():
            db.execute_sql(f"UPDATE heartbeat_monitor SET {both_or_neither} WHERE component_id = 1")

    assert runner.down() == [MIGRATION]
    assert db.execute_sql("SELECT key FROM component ORDER BY id").fetchall() == [("finished",), ("running",)]
    with pytest.raises(peewee.IntegrityError), db.atomic():
        db.execute_sql("UPDATE heartbeat_monitor SET period_seconds = NULL")
