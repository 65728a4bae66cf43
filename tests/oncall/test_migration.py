"""Migration 0028: a source's signing settings, reply codes without an expiry, and the count of a
number's wrong codes; the way down gives codes their day back."""

from __future__ import annotations

import peewee
import pytest
from playhouse.migrations import Runner

from pulse.db import MIGRATIONS_DIR, db
from tests.support.migrations import database_at

BEFORE = "0027_api_tokens"
MIGRATION = "0028_signatures_and_reply_codes"
CODE = """
INSERT INTO oncall_reply_code (notification_id, alert_id, person_id, phone, code, created_at{})
VALUES (1, 1, 1, '+14155550102', '482193', '2026-12-07 10:00:00+00'{})
"""
COLUMNS = "SELECT column_name FROM information_schema.columns WHERE table_name IN ('oncall_reply_code', 'alert_source')"


@pytest.fixture
def old_database(settings):
    """A database of its own at migration 0027, with one reply code (and what it hangs on)."""
    with database_at(settings, BEFORE, "_reply_codes") as database:
        db.execute_sql("SET session_replication_role = replica")  # no foreign keys: the code alone
        db.execute_sql(CODE.format(", expires_at", ", '2026-12-08 10:00:00+00'"))
        db.execute_sql("SET session_replication_role = DEFAULT")
        yield database


def test_codes_lose_their_expiry_and_wrong_codes_are_counted_by_number(old_database):
    runner = Runner(old_database, MIGRATIONS_DIR)
    assert runner.up(MIGRATION) == [MIGRATION]
    columns = {row[0] for row in db.execute_sql(COLUMNS)}
    assert "signature" in columns and "expires_at" not in columns
    db.execute_sql("INSERT INTO oncall_reply_miss (phone, since, misses) VALUES ('+14155550102', now(), 1)")
    for phone, misses in [("+14155550102", 1), ("+14155550100", 0)]:  # one row a number; at least one miss
        with pytest.raises(peewee.IntegrityError), db.atomic():
            db.execute_sql(
                "INSERT INTO oncall_reply_miss (phone, since, misses) VALUES (%s, now(), %s)", (phone, misses)
            )

    assert runner.down() == [MIGRATION]
    expiry = db.execute_sql("SELECT expires_at - created_at FROM oncall_reply_code").fetchone()[0]
    assert expiry.total_seconds() == 24 * 3600
    assert db.execute_sql("SELECT to_regclass('oncall_reply_miss')").fetchone() == (None,)
