"""Migrations 0030 to 0035: a component, channel, subscriber, integration, metric, calculated
metric, person, on-call schedule, escalation policy or alert source already there is the file's, at
version 1; an owner is ``file`` or ``api``; the idempotency keys and audit rows go with their token
and organization; the way down drops them all."""

from __future__ import annotations

import hashlib

import peewee
import pytest
from playhouse.migrations import Runner

from pulse.db import MIGRATIONS_DIR, db
from tests.support.migrations import database_at

BEFORE = "0029_location_batches"
MIGRATIONS = ["0030_component_owners", "0031_api_writes"]


@pytest.fixture
def old_database(settings):
    """A database of its own at migration 0029, with a component and a token."""
    with database_at(settings, BEFORE, "_api_writes") as database:
        db.execute_sql("INSERT INTO organization (slug, name) VALUES ('acme', 'Acme')")
        db.execute_sql("INSERT INTO component (organization_id, key, name) VALUES (1, 'api', 'API')")
        db.execute_sql(
            "INSERT INTO api_token (organization_id, scopes, token_sha256) VALUES (1, %s, %s)",
            (["write"], hashlib.sha256(b"one").digest()),
        )
        yield database


def test_the_columns_and_tables_of_the_apis_writes(old_database):
    runner = Runner(old_database, MIGRATIONS_DIR)
    assert runner.up(MIGRATIONS[-1]) == MIGRATIONS
    assert db.execute_sql("SELECT owner, version FROM component").fetchall() == [("file", 1)]
    with pytest.raises(peewee.IntegrityError), db.atomic():
        db.execute_sql("UPDATE component SET owner = 'someone'")
    db.execute_sql(
        "INSERT INTO api_idempotency (token_id, key, request_sha256) VALUES (1, 'k', %s)",
        (hashlib.sha256(b"request").digest(),),
    )
    db.execute_sql(
        "INSERT INTO api_audit (organization_id, token_id, action, object_type, object_key, status)"
        " VALUES (1, 1, 'create', 'component', 'api', 201)"
    )

    db.execute_sql("DELETE FROM api_token")
    assert db.execute_sql("SELECT count(*) FROM api_idempotency").fetchone() == (0,)
    assert db.execute_sql("SELECT token_id FROM api_audit").fetchall() == [(None,)]
    db.execute_sql("DELETE FROM organization")
    assert db.execute_sql("SELECT count(*) FROM api_audit").fetchone() == (0,)

    assert runner.down() == [MIGRATIONS[-1]] and runner.down() == [MIGRATIONS[0]]
    assert db.execute_sql("SELECT to_regclass('api_audit'), to_regclass('api_idempotency')").fetchone() == (None, None)
    columns = "SELECT count(*) FROM information_schema.columns WHERE table_name = 'component' AND column_name = 'owner'"
    assert db.execute_sql(columns).fetchone() == (0,)


@pytest.fixture
def database_at_0031(settings):
    """A database of its own at migration 0031, with a channel and a subscriber."""
    with database_at(settings, MIGRATIONS[-1], "_channel_owners") as database:
        db.execute_sql("INSERT INTO organization (slug, name) VALUES ('acme', 'Acme')")
        db.execute_sql("INSERT INTO notification_channel (organization_id, key, type) VALUES (1, 'ops', 'slack')")
        db.execute_sql("INSERT INTO subscriber (organization_id, kind, address) VALUES (1, 'email', 'a@acme.example')")
        yield database


def test_channels_and_subscribers_have_an_owner_and_a_version(database_at_0031):
    runner = Runner(database_at_0031, MIGRATIONS_DIR)
    assert runner.up("0032_channel_owners") == ["0032_channel_owners"]
    for table in ("notification_channel", "subscriber"):
        assert db.execute_sql(f"SELECT owner, version FROM {table}").fetchall() == [("file", 1)]
        with pytest.raises(peewee.IntegrityError), db.atomic():
            db.execute_sql(f"UPDATE {table} SET owner = 'someone'")
        with pytest.raises(peewee.IntegrityError), db.atomic():
            db.execute_sql(f"UPDATE {table} SET version = 0")

    assert runner.down() == ["0032_channel_owners"]
    columns = (
        "SELECT count(*) FROM information_schema.columns WHERE column_name IN ('owner', 'version') AND table_name = %s"
    )
    assert [db.execute_sql(columns, (t,)).fetchone() for t in ("notification_channel", "subscriber")] == [(0,), (0,)]


@pytest.fixture
def sources_at_0032(settings):
    """A database of its own at migration 0032, with an alert source."""
    with database_at(settings, "0032_channel_owners", "_alert_source_owners") as database:
        db.execute_sql("INSERT INTO organization (slug, name) VALUES ('acme', 'Acme')")
        db.execute_sql(
            "INSERT INTO alert_source (organization_id, key, name, kind, token_sha256, routes)"
            " VALUES (1, 'prometheus', 'Prometheus', 'alertmanager', %s, '[]')",
            (hashlib.sha256(b"token").digest(),),
        )
        yield database


def test_alert_sources_have_an_owner_and_a_version(sources_at_0032):
    runner = Runner(sources_at_0032, MIGRATIONS_DIR)
    assert runner.up("0035_alert_source_owners")[-1] == "0035_alert_source_owners"
    assert db.execute_sql("SELECT owner, version FROM alert_source").fetchall() == [("file", 1)]
    for change in ("owner = 'someone'", "version = 0"):
        with pytest.raises(peewee.IntegrityError), db.atomic():
            db.execute_sql(f"UPDATE alert_source SET {change}")

    assert runner.down() == ["0035_alert_source_owners"]
    columns = "SELECT count(*) FROM information_schema.columns WHERE table_name = 'alert_source' AND column_name = %s"
    assert [db.execute_sql(columns, (c,)).fetchone() for c in ("owner", "version")] == [(0,), (0,)]


# A migration, the tables it gives an owner and a version, and a row of each to insert at 0032.
OWNED = {
    "0033_metric_owners": [
        "INSERT INTO integration (organization_id, key, type) VALUES (1, 'prom', 'prometheus')",
        "INSERT INTO metrics_query (organization_id, integration_id, key, name, query) VALUES (1, 1, 'up', 'Up', 'up')",
        "INSERT INTO calculated_metric (organization_id, key, name, formula, max_age_seconds)"
        " VALUES (1, 'twice', 'Twice', 'x * 2', 600)",
    ],
    "0034_oncall_owners": [
        "INSERT INTO person (organization_id, key, name) VALUES (1, 'alice', 'Alice')",
        "INSERT INTO oncall_schedule (organization_id, key, name, time_zone) VALUES (1, 'p', 'P', 'UTC')",
        "INSERT INTO escalation_policy (organization_id, key, name, levels, contact)"
        " VALUES (1, 'default', 'Default', '[]', '{sms}')",
    ],
}


@pytest.mark.parametrize("migration", list(OWNED))
def test_what_the_file_declares_has_an_owner_and_a_version(settings, migration):
    with database_at(settings, "0032_channel_owners", migration[4:]) as database:
        db.execute_sql("INSERT INTO organization (slug, name) VALUES ('acme', 'Acme')")
        for insert in OWNED[migration]:
            db.execute_sql(insert)
        tables = [insert.split()[2] for insert in OWNED[migration]]
        runner = Runner(database, MIGRATIONS_DIR)
        assert runner.up(migration)[-1] == migration
        for table in tables:
            assert db.execute_sql(f"SELECT owner, version FROM {table}").fetchall() == [("file", 1)]
            for change in ("owner = 'someone'", "version = 0"):
                with pytest.raises(peewee.IntegrityError), db.atomic():
                    db.execute_sql(f"UPDATE {table} SET {change}")

        assert runner.down() == [migration]
        columns = (
            "SELECT count(*) FROM information_schema.columns WHERE column_name IN ('owner', 'version') "
            "AND table_name = %s"
        )
        assert [db.execute_sql(columns, (t,)).fetchone() for t in tables] == [(0,)] * len(tables)
