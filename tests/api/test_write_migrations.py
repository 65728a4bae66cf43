"""Migrations 0030 to 0032 and 0034: a component, channel, subscriber, person, on-call schedule or
escalation policy already there is the file's, at version 1; an owner is ``file`` or ``api``; the
idempotency keys and audit rows go with their token and organization; the way down drops them all."""

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
def database_at_0032(settings):
    """A database of its own at migration 0032, with a person, a schedule and an escalation policy."""
    with database_at(settings, "0032_channel_owners", "_oncall_owners") as database:
        db.execute_sql("INSERT INTO organization (slug, name) VALUES ('acme', 'Acme')")
        db.execute_sql("INSERT INTO person (organization_id, key, name) VALUES (1, 'alice', 'Alice')")
        db.execute_sql(
            "INSERT INTO oncall_schedule (organization_id, key, name, time_zone) VALUES (1, 'p', 'P', 'UTC')"
        )
        db.execute_sql(
            "INSERT INTO escalation_policy (organization_id, key, name, levels, contact)"
            " VALUES (1, 'default', 'Default', '[]', '{sms}')"
        )
        yield database


def test_people_schedules_and_escalation_policies_have_an_owner_and_a_version(database_at_0032):
    runner = Runner(database_at_0032, MIGRATIONS_DIR)
    tables = ("person", "oncall_schedule", "escalation_policy")
    assert runner.up("0034_oncall_owners") == ["0034_oncall_owners"]
    for table in tables:
        assert db.execute_sql(f"SELECT owner, version FROM {table}").fetchall() == [("file", 1)]
        with pytest.raises(peewee.IntegrityError), db.atomic():
            db.execute_sql(f"UPDATE {table} SET owner = 'someone'")
        with pytest.raises(peewee.IntegrityError), db.atomic():
            db.execute_sql(f"UPDATE {table} SET version = 0")

    assert runner.down() == ["0034_oncall_owners"]
    columns = (
        "SELECT count(*) FROM information_schema.columns WHERE column_name IN ('owner', 'version') AND table_name = %s"
    )
    assert [db.execute_sql(columns, (t,)).fetchone() for t in tables] == [(0,), (0,), (0,)]
