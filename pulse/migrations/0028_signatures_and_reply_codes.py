"""A grafana alert source's signing settings, and reply codes that live while their alert escalates.

- ``alert_source.signature`` (`pulse.sources.signature`): ``{"secret", "header",
  "timestamp_header"}``, NULL for a source whose requests are not signed.
- ``oncall_reply_code.expires_at`` goes: a code is live while its alert is triggered
  (`pulse.oncall.replies`), not for a day.
- ``oncall_reply_miss``: the wrong codes a number has replied with since when, counted in one place
  for every process of `pulse serve` (`pulse.oncall.smshook`).
"""

STATEMENTS = [
    "ALTER TABLE alert_source ADD COLUMN signature JSONB NULL",
    "ALTER TABLE oncall_reply_code DROP COLUMN expires_at",
    """
    CREATE TABLE oncall_reply_miss (
        phone VARCHAR(16) PRIMARY KEY,
        since TIMESTAMPTZ NOT NULL,
        misses INTEGER NOT NULL CHECK (misses > 0)
    )
    """,
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DROP TABLE oncall_reply_miss")
    db.execute_sql("ALTER TABLE oncall_reply_code ADD COLUMN expires_at TIMESTAMPTZ")
    db.execute_sql("UPDATE oncall_reply_code SET expires_at = created_at + interval '24 hours'")
    db.execute_sql("ALTER TABLE oncall_reply_code ALTER COLUMN expires_at SET NOT NULL")
    db.execute_sql("ALTER TABLE alert_source DROP COLUMN signature")
