"""Migration 0027: ``api_token`` takes a token's digest and known scopes only, goes with its
organization, and is dropped by the way down."""

from __future__ import annotations

import hashlib

import peewee
import pytest
from playhouse.migrations import Runner

from pulse.db import MIGRATIONS_DIR, db
from tests.support.migrations import database_at

BEFORE = "0026_unknown_slots"
MIGRATION = "0027_api_tokens"
INSERT = "INSERT INTO api_token (organization_id, scopes, token_sha256) VALUES (1, %s, %s)"


@pytest.fixture
def old_database(settings):
    """A database of its own at migration 0026."""
    with database_at(settings, BEFORE, "_api_tokens") as database:
        yield database


def test_a_token_row_holds_a_digest_and_known_scopes_and_goes_with_its_organization(old_database):
    runner = Runner(old_database, MIGRATIONS_DIR)
    assert runner.up(MIGRATION) == [MIGRATION]
    db.execute_sql("INSERT INTO organization (slug, name) VALUES ('acme', 'Acme')")
    db.execute_sql(INSERT, (["read", "oncall"], hashlib.sha256(b"one").digest()))

    for scopes, stored in [
        (["admin"], hashlib.sha256(b"two").digest()),  # an unknown scope
        ([], hashlib.sha256(b"two").digest()),  # none
        (["read"], b"pulse_not-a-digest"),  # not 32 bytes: a token itself
        (["read"], hashlib.sha256(b"one").digest()),  # the same digest twice
    ]:
        with pytest.raises(peewee.IntegrityError), db.atomic():
            db.execute_sql(INSERT, (scopes, stored))
    assert db.execute_sql("SELECT count(*) FROM api_token").fetchone() == (1,)

    db.execute_sql("DELETE FROM organization")
    assert db.execute_sql("SELECT count(*) FROM api_token").fetchone() == (0,)

    assert runner.down() == [MIGRATION]
    assert db.execute_sql("SELECT to_regclass('api_token')").fetchone() == (None,)
