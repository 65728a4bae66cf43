"""Who writes a component, and its version: ``component.owner`` is ``file`` (made or last taken
over by `pulse apply`, which alone changes it) or ``api`` (made through the API, or released from
the file with `pulse components release`); ``component.version`` counts the writes of its
configuration, for the API's ETags. Every component already there came from a file."""

STATEMENTS = [
    "ALTER TABLE component ADD COLUMN owner TEXT NOT NULL DEFAULT 'file' CHECK (owner IN ('file', 'api'))",
    "ALTER TABLE component ADD COLUMN version INTEGER NOT NULL DEFAULT 1 CHECK (version > 0)",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("ALTER TABLE component DROP COLUMN owner, DROP COLUMN version")
