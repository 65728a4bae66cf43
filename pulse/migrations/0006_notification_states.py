"""Subscribers: when their subscription was found gone (a push service's 404 or 410); notifications:
an index for the sweep of those no message will deliver any more."""

STATEMENTS = [
    "ALTER TABLE subscriber ADD COLUMN gone_at TIMESTAMPTZ",
    """CREATE INDEX notification_unfinished ON notification (coalesce(claimed_at, created_at))
       WHERE status IN ('pending', 'sending')""",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DROP INDEX notification_unfinished")
    db.execute_sql("ALTER TABLE subscriber DROP COLUMN gone_at")
