"""Certificate expiry warnings: a component tells its channels when the TLS certificate its checks
see is a number of days from expiry (``component.certificate_warning_days``, 14 and 3 by default;
empty: none), once per threshold and certificate (`pulse.uptime.expiry`). A certificate is told
apart by its notAfter; ``certificate_warning`` holds one row per warning claimed (its primary key
is the claim), deleted with the component, or by the cleanup once the certificate has expired a
while."""

STATEMENTS = [
    "ALTER TABLE component ADD COLUMN certificate_warning_days INTEGER[] NOT NULL DEFAULT '{14,3}'",
    """
    CREATE TABLE certificate_warning (
        component_id BIGINT NOT NULL REFERENCES component (id) ON DELETE CASCADE,
        not_after TIMESTAMPTZ NOT NULL,
        threshold_days INTEGER NOT NULL CHECK (threshold_days > 0),
        sent_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (component_id, not_after, threshold_days)
    )
    """,
    "CREATE INDEX certificate_warning_not_after ON certificate_warning (not_after)",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DROP TABLE certificate_warning")
    db.execute_sql("ALTER TABLE component DROP COLUMN certificate_warning_days")
