"""Who writes a person, an on-call schedule (its layers and overrides with it: they are its columns)
or an escalation policy, and its version, as for components (0030) and channels (0032): ``owner``
is ``file`` (made or last taken over by `pulse apply`) or ``api`` (made through the API, or released
from the file with `pulse people release`, `pulse schedules release` or `pulse escalation-policies
release`); ``version`` counts the writes of its configuration, for the API's ETags. Every one
already there came from a file."""

TABLES = ("person", "oncall_schedule", "escalation_policy")
STATEMENTS = [
    f"""
    ALTER TABLE {table}
        ADD COLUMN owner TEXT NOT NULL DEFAULT 'file' CHECK (owner IN ('file', 'api')),
        ADD COLUMN version INTEGER NOT NULL DEFAULT 1 CHECK (version > 0)
    """
    for table in TABLES
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    for table in TABLES:
        db.execute_sql(f"ALTER TABLE {table} DROP COLUMN owner, DROP COLUMN version")
