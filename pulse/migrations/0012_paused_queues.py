"""Queues an operator paused (`pulse queues pause`): no worker takes their messages (see pulse.pause)."""

STATEMENTS = [
    """
    CREATE TABLE paused_queue (
        queue_name VARCHAR(128) PRIMARY KEY,
        paused_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )
    """,
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DROP TABLE paused_queue")
