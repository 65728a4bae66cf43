"""Components: whether a check sends its configured headers on a redirect to another origin."""

STATEMENTS = [
    "ALTER TABLE component ADD COLUMN forward_headers BOOLEAN NOT NULL DEFAULT FALSE",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("ALTER TABLE component DROP COLUMN forward_headers")
