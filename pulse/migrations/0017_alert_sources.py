"""Alert sources: what sends alerts in (an events API client, Alertmanager, Grafana), each with its
token's SHA-256 (never the token) and how its alerts are routed to escalation policies; the events
that arrived from each, kept until a worker applied them; and on-call alerts that come from a source
(keyed by its ``dedup_key``, at most one open per key) beside those of incidents. Every alert gets
its title on its own row."""

STATEMENTS = [
    """
    CREATE TABLE alert_source (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        key VARCHAR(64) NOT NULL,
        name VARCHAR(200) NOT NULL,
        kind VARCHAR(16) NOT NULL CHECK (kind IN ('events', 'alertmanager', 'grafana')),
        token_sha256 BYTEA NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
        routes JSONB NOT NULL,
        pending_at TIMESTAMPTZ,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (organization_id, key)
    )
    """,
    "CREATE INDEX alert_source_pending ON alert_source (pending_at) WHERE pending_at IS NOT NULL",
    """
    CREATE TABLE alert_event (
        id BIGSERIAL PRIMARY KEY,
        source_id BIGINT NOT NULL REFERENCES alert_source (id) ON DELETE CASCADE,
        received_at TIMESTAMPTZ NOT NULL,
        action VARCHAR(16) NOT NULL CHECK (action IN ('trigger', 'acknowledge', 'resolve')),
        dedup_key VARCHAR(255) NOT NULL,
        summary VARCHAR(1024) NOT NULL,
        severity VARCHAR(16) NOT NULL,
        labels JSONB NOT NULL,
        details JSONB NOT NULL,
        applied BOOLEAN NOT NULL DEFAULT false
    )
    """,
    "CREATE INDEX alert_event_waiting ON alert_event (source_id, id) WHERE NOT applied",
    "CREATE INDEX alert_event_applied ON alert_event (received_at) WHERE applied",
    # A trigger of an open alert is compared with the key's last applied event (`pulse.sources.apply`).
    "CREATE INDEX alert_event_key ON alert_event (source_id, dedup_key, id) WHERE applied",
    "ALTER TABLE oncall_alert ALTER COLUMN incident_id DROP NOT NULL",
    "ALTER TABLE oncall_alert ADD COLUMN source_id BIGINT REFERENCES alert_source (id) ON DELETE CASCADE",
    "ALTER TABLE oncall_alert ADD COLUMN dedup_key VARCHAR(255)",
    "ALTER TABLE oncall_alert ADD COLUMN title VARCHAR(1024) NOT NULL DEFAULT ''",
    "UPDATE oncall_alert a SET title = i.title FROM incident i WHERE i.id = a.incident_id",
    """
    ALTER TABLE oncall_alert ADD CONSTRAINT oncall_alert_origin
        CHECK ((incident_id IS NULL) = (source_id IS NOT NULL) AND (source_id IS NULL) = (dedup_key IS NULL))
    """,
    """
    CREATE UNIQUE INDEX oncall_alert_open_key ON oncall_alert (source_id, dedup_key)
     WHERE status <> 'resolved' AND source_id IS NOT NULL
    """,
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DELETE FROM oncall_alert WHERE source_id IS NOT NULL")
    db.execute_sql("ALTER TABLE oncall_alert DROP CONSTRAINT oncall_alert_origin")
    for column in ("title", "dedup_key", "source_id"):
        db.execute_sql(f"ALTER TABLE oncall_alert DROP COLUMN {column}")
    db.execute_sql("ALTER TABLE oncall_alert ALTER COLUMN incident_id SET NOT NULL")
    db.execute_sql("DROP TABLE alert_event")
    db.execute_sql("DROP TABLE alert_source")
