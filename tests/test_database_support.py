"""The `database` fixture: each test starts with every table empty and every id from 1, whether the
test before left a few rows (deleted) or a table grown large (truncated)."""

from pulse.db import db
from pulse.models import Component, Organization
from tests.conftest import BLOATED_BYTES, empty_tables
from tests.support.models import Attempt


def rows_left():
    tables = db.execute_sql(
        "SELECT oid::regclass::text FROM pg_class WHERE relnamespace = 'public'::regnamespace"
        " AND relkind IN ('r', 'p') AND NOT relispartition AND relname <> 'schema_migration'"
    ).fetchall()
    return {table: n for (table,) in tables if (n := db.execute_sql(f"SELECT count(*) FROM {table}").fetchone()[0])}


def test_a_few_rows_are_deleted_and_ids_start_again_at_1(database):
    acme = Organization.create(slug="acme", name="Acme")
    Component.create(organization=acme, key="api", name="API", url="http://127.0.0.1:1/")
    Attempt.create(key="k", message_id="m", number=1, pid=1)
    assert rows_left() == {"organization": 1, "component": 1, "test_attempt": 1}

    empty_tables()

    assert rows_left() == {}
    assert Organization.create(slug="acme", name="Acme").id == 1


def test_a_table_grown_past_the_bound_is_truncated(database):
    db.execute_sql(
        "INSERT INTO test_attempt (key, message_id, number, pid, at)"
        " SELECT repeat('k', 200), 'm', n, 1, now() FROM generate_series(1, %s) AS n",
        (BLOATED_BYTES // 200 * 2,),
    )
    size = "SELECT pg_relation_size('test_attempt')"
    assert db.execute_sql(size).fetchone()[0] > BLOATED_BYTES

    empty_tables()

    assert db.execute_sql(size).fetchone()[0] == 0  # new, empty files: not dead rows kept
    assert rows_left() == {}
    assert Attempt.create(key="k", message_id="m", number=1, pid=1).id == 1
