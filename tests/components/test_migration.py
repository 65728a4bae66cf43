"""Migration 0015: the thresholds of metrics queries and calculated metrics keep their values under
their new names, and back; components keep theirs."""

from __future__ import annotations

import pytest
from playhouse.migrations import Runner

from pulse.db import MIGRATIONS_DIR, db
from tests.support.migrations import database_at

BEFORE = "0014_calculated_marks"
MIGRATION = "0015_threshold_names"


@pytest.fixture
def old_database(settings):
    """A database of its own at migration 0014."""
    with database_at(settings, BEFORE, "_thresholds") as database:
        yield database


def test_the_counts_keep_their_values_under_their_new_names_and_back(old_database):
    db.execute_sql("INSERT INTO organization (slug, name) VALUES ('acme', 'Acme')")
    db.execute_sql(
        "INSERT INTO component (organization_id, key, name, failure_threshold, success_threshold)"
        " VALUES (1, 'api', 'API', 4, 5)"
    )
    db.execute_sql("INSERT INTO integration (organization_id, key, type) VALUES (1, 'prom', 'prometheus')")
    db.execute_sql(
        "INSERT INTO metrics_query (organization_id, integration_id, key, name, query, failure_threshold,"
        " success_threshold) VALUES (1, 1, 'p95', 'p95', 'up', 3, 2)"
    )
    db.execute_sql(
        "INSERT INTO calculated_metric (organization_id, key, name, formula, max_age_seconds, failure_threshold,"
        " success_threshold) VALUES (1, 'rate', 'Rate', 'a', 600, 6, 7)"
    )
    runner = Runner(old_database, MIGRATIONS_DIR)

    assert runner.up(MIGRATION) == [MIGRATION]
    assert db.execute_sql("SELECT for_count, recover_count FROM metrics_query").fetchone() == (3, 2)
    assert db.execute_sql("SELECT for_count, recover_count FROM calculated_metric").fetchone() == (6, 7)
    assert db.execute_sql("SELECT failure_threshold, success_threshold FROM component").fetchone() == (4, 5)

    assert runner.down() == [MIGRATION]
    assert db.execute_sql("SELECT failure_threshold, success_threshold FROM metrics_query").fetchone() == (3, 2)
    assert db.execute_sql("SELECT failure_threshold, success_threshold FROM calculated_metric").fetchone() == (6, 7)
