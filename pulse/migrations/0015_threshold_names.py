"""The thresholds of metrics queries and calculated metrics take their names in the file: ``for``
and ``recover`` are stored as ``for_count`` and ``recover_count`` (`pulse.components.thresholds`).
Components keep ``failure_threshold`` and ``success_threshold``, the words of their uptime checks."""

TABLES = ("metrics_query", "calculated_metric")
NAMES = (("failure_threshold", "for_count"), ("success_threshold", "recover_count"))


def up(migrator, db):
    for table in TABLES:
        for old, new in NAMES:
            db.execute_sql(f"ALTER TABLE {table} RENAME COLUMN {old} TO {new}")


def down(migrator, db):
    for table in TABLES:
        for old, new in NAMES:
            db.execute_sql(f"ALTER TABLE {table} RENAME COLUMN {new} TO {old}")
