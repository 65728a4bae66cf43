"""Messages whose worker process the watchdog replaced, and how often (see pulse.middleware.watchdog)."""

STATEMENTS = [
    """
    CREATE TABLE runaway_message (
        message_id VARCHAR(64) PRIMARY KEY,
        actor_name VARCHAR(128) NOT NULL,
        queue_name VARCHAR(128) NOT NULL,
        kills INTEGER NOT NULL,
        last_killed_at TIMESTAMPTZ NOT NULL
    )
    """,
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DROP TABLE runaway_message")
