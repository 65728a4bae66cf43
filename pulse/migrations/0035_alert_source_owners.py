"""Who writes an alert source, and its version, as for components (0030) and channels (0032):
``owner`` is ``file`` (made or last taken over by `pulse apply`) or ``api`` (made through the API,
or released from the file with `pulse alert-sources release`); ``version`` counts the writes of its
configuration, for the API's ETags. Every one already there came from a file."""

STATEMENT = """
ALTER TABLE alert_source
    ADD COLUMN owner TEXT NOT NULL DEFAULT 'file' CHECK (owner IN ('file', 'api')),
    ADD COLUMN version INTEGER NOT NULL DEFAULT 1 CHECK (version > 0)
"""


def up(migrator, db):
    db.execute_sql(STATEMENT)


def down(migrator, db):
    db.execute_sql("ALTER TABLE alert_source DROP COLUMN owner, DROP COLUMN version")
