"""Domain expiry warnings: a component that opts in (``component.domain_warning_days``, empty by
default: RDAP lookups go to a third party) tells its channels when the registration of its host's
registered domain (``component.domain``, set only then) is a number of days from expiry, once per
threshold and expiry date (`pulse.uptime.domains`).

``domain_expiry`` caches each domain's RDAP answer, looked up again at most once a day: its expiry
(NULL when unknown) and why it is unknown (``problem``). ``domain_warning`` holds one row per
warning claimed (its primary key is the claim), deleted with the component, or by the cleanup
once the registration has expired a while."""

STATEMENTS = [
    "ALTER TABLE component ADD COLUMN domain_warning_days INTEGER[] NOT NULL DEFAULT '{}'",
    "ALTER TABLE component ADD COLUMN domain TEXT NULL",
    "CREATE INDEX component_domain ON component (domain) WHERE domain IS NOT NULL",
    """
    CREATE TABLE domain_expiry (
        domain TEXT PRIMARY KEY,
        expires_at TIMESTAMPTZ NULL,
        checked_at TIMESTAMPTZ NOT NULL,
        problem TEXT NULL
    )
    """,
    """
    CREATE TABLE domain_warning (
        component_id BIGINT NOT NULL REFERENCES component (id) ON DELETE CASCADE,
        expires_at TIMESTAMPTZ NOT NULL,
        threshold_days INTEGER NOT NULL CHECK (threshold_days > 0),
        sent_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (component_id, expires_at, threshold_days)
    )
    """,
    "CREATE INDEX domain_warning_expires_at ON domain_warning (expires_at)",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DROP TABLE domain_warning")
    db.execute_sql("DROP TABLE domain_expiry")
    db.execute_sql("DROP INDEX component_domain")
    db.execute_sql("ALTER TABLE component DROP COLUMN domain")
    db.execute_sql("ALTER TABLE component DROP COLUMN domain_warning_days")
