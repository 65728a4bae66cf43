"""What was sent to each location (`pulse.locations.dispatch`): ``location_sent`` holds, for each
slot waiting for its verdict (its ``location_slot`` row), each location it was sent to and the
nonce of the sealed batch that carried it. A location's result counts only for a slot its batch
sent it, while the slot waits for it (`pulse.locations.verdict`): the rows go with their slot."""

STATEMENTS = [
    """
    CREATE TABLE location_sent (
        component_id BIGINT NOT NULL,
        scheduled_at TIMESTAMPTZ NOT NULL,
        location TEXT NOT NULL,
        nonce UUID NOT NULL,
        PRIMARY KEY (nonce, location, component_id, scheduled_at),
        FOREIGN KEY (component_id, scheduled_at) REFERENCES location_slot (component_id, scheduled_at)
            ON DELETE CASCADE
    )
    """,
    "CREATE INDEX location_sent_slot ON location_sent (component_id, scheduled_at)",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DROP TABLE location_sent")
