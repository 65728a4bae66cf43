"""Migration 0011 on a database with history: every row kept in place, as the legacy partition,
the new ones in day partitions, rolled up and cleaned like the rest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playhouse.migrations import Runner

from pulse.cleanup import partitions, retention, rollups
from pulse.db import MIGRATIONS_DIR, db
from pulse.models import UptimeCheck
from tests.support.migrations import database_at

BEFORE = "0010_oncall_alerts"
MIGRATION = "0011_cleanup"


@pytest.fixture
def old_database(settings):
    """A database of its own at migration 0010."""
    with database_at(settings, BEFORE, "_migration") as database:
        yield database


def test_a_table_with_rows_becomes_the_legacy_partition(old_database):
    now = datetime.now(UTC)
    db.execute_sql("INSERT INTO organization (slug, name) VALUES ('acme', 'Acme')")
    db.execute_sql("INSERT INTO component (organization_id, key, name) VALUES (1, 'api', 'API')")
    slots = [now - timedelta(days=days, minutes=minutes) for days in (100, 95, 3) for minutes in range(0, 60, 20)]
    for slot in slots:
        db.execute_sql(
            "INSERT INTO uptime_check (component_id, scheduled_at, checked_at, success, outcome)"
            " VALUES (1, %s, %s, true, 'OPERATIONAL')",
            (slot, slot),
        )
    (max_id,) = db.execute_sql("SELECT max(id) FROM uptime_check").fetchone()

    assert Runner(old_database, MIGRATIONS_DIR).up(MIGRATION) == [MIGRATION]

    names = [p.name for p in partitions.partitions("uptime_check")]
    assert names[0] == "uptime_check_legacy" and names[-1] == "uptime_check_default"
    assert len(names) == 2 + 7  # the legacy one (today included), tomorrow to a week from today, the default one
    assert {c.scheduled_at for c in UptimeCheck.select()} == set(slots)
    assert {r[0] for r in db.execute_sql("SELECT tableoid::regclass::text FROM uptime_check")} == {
        "uptime_check_legacy"
    }
    # The unique slot still holds across the old rows; new rows go on numbering and into their day.
    duplicate = db.execute_sql(
        "INSERT INTO uptime_check (component_id, scheduled_at, success, outcome) VALUES (1, %s, true, 'X')"
        " ON CONFLICT DO NOTHING RETURNING id",
        (slots[0],),
    ).fetchone()
    assert duplicate is None
    tomorrow = now + timedelta(days=1)
    new_id, where = db.execute_sql(
        "INSERT INTO uptime_check (component_id, scheduled_at, success, outcome) VALUES (1, %s, true, 'OPERATIONAL')"
        " RETURNING id, tableoid::regclass::text",
        (tomorrow,),
    ).fetchone()
    assert new_id > max_id
    assert where == partitions.day_name("uptime_check", tomorrow.replace(hour=0, minute=0, second=0, microsecond=0))
    # The rollups start from the oldest row; the cleanup (of today's schema: the later migrations
    # first) then deletes the old ones, one by one, since the legacy partition also holds days not
    # past retention.
    Runner(old_database, MIGRATIONS_DIR).up()
    assert rollups.catch_up(rollups.UPTIME, now=now + timedelta(minutes=5)).caught_up
    report = retention.clean(now, dead_letters=timedelta(days=30))
    (uptime,) = [f for f in report.tables if f.table == "uptime_check"]
    assert (uptime.rows, uptime.partitions) == (6, [])
    assert UptimeCheck.select().count() == 4
    # Once all of it is past retention, it goes whole.
    later = now + timedelta(days=92)
    rollups.catch_up(rollups.UPTIME, now=later)
    report = retention.clean(later, dead_letters=timedelta(days=30))
    (uptime,) = [f for f in report.tables if f.table == "uptime_check"]
    assert "uptime_check_legacy" in uptime.partitions


def test_an_empty_table_is_partitioned_from_today(old_database):
    Runner(old_database, MIGRATIONS_DIR).up()
    for table in partitions.TABLES:
        names = [p.name for p in partitions.partitions(table)]
        assert names[0] == partitions.day_name(
            table, datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        )
        assert len(names) == 8 + 1 and names[-1] == f"{table}_default"
    assert rollups.watermarks() == {kind.name: None for kind in rollups.KINDS}


def test_the_migration_goes_back_with_every_row(old_database):
    db.execute_sql("INSERT INTO organization (slug, name) VALUES ('acme', 'Acme')")
    db.execute_sql("INSERT INTO component (organization_id, key, name) VALUES (1, 'api', 'API')")
    db.execute_sql(
        "INSERT INTO uptime_check (component_id, scheduled_at, success, outcome) VALUES (1, now(), true, 'OPERATIONAL')"
    )
    runner = Runner(old_database, MIGRATIONS_DIR)
    runner.up(MIGRATION)
    db.execute_sql(
        "INSERT INTO uptime_check (component_id, scheduled_at, success, outcome)"
        " VALUES (1, now() + interval '2 days', true, 'OPERATIONAL')"
    )
    assert runner.down() == [MIGRATION]
    assert db.execute_sql(
        "SELECT count(*), bool_and(c.relkind = 'r') FROM uptime_check, pg_class c"
        " WHERE c.oid = 'uptime_check'::regclass"
    ).fetchone() == (2, True)
    assert runner.up(MIGRATION) == [MIGRATION]  # and forward again
    assert db.execute_sql("SELECT count(*) FROM uptime_check_legacy").fetchone() == (2,)
