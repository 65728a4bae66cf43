"""A grafana alert source's signing settings (`pulse.sources.signature`): ``alert_source.signature``,
``{"secret", "header", "timestamp_header"}``, NULL for a source whose requests are not signed."""

STATEMENTS = [
    "ALTER TABLE alert_source ADD COLUMN signature JSONB NULL",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("ALTER TABLE alert_source DROP COLUMN signature")
