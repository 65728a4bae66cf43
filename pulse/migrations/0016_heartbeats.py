"""Heartbeat monitors: components of type HEARTBEAT, which the watched job pings
(`pulse.heartbeats`). Each has its ping token's SHA-256 (never the token), its period and grace,
its last ping and its next deadline; its latest pings are kept, each until a worker applied it."""

STATEMENTS = [
    "ALTER TABLE component DROP CONSTRAINT component_type_check",
    "ALTER TABLE component ADD CONSTRAINT component_type_check "
    "CHECK (type IN ('ENDPOINT', 'METRIC', 'SERVICE', 'HEARTBEAT'))",
    """
    CREATE TABLE heartbeat_monitor (
        component_id BIGINT PRIMARY KEY REFERENCES component (id) ON DELETE CASCADE,
        token_sha256 BYTEA NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
        period_seconds INTEGER NOT NULL CHECK (period_seconds > 0),
        grace_seconds INTEGER NOT NULL CHECK (grace_seconds > 0),
        last_ping_at TIMESTAMPTZ,
        last_start_at TIMESTAMPTZ,
        deadline_at TIMESTAMPTZ,
        pending_at TIMESTAMPTZ
    )
    """,
    "CREATE INDEX heartbeat_monitor_deadline ON heartbeat_monitor (deadline_at)",
    "CREATE INDEX heartbeat_monitor_pending ON heartbeat_monitor (pending_at) WHERE pending_at IS NOT NULL",
    """
    CREATE TABLE heartbeat_ping (
        id BIGSERIAL PRIMARY KEY,
        component_id BIGINT NOT NULL REFERENCES heartbeat_monitor (component_id) ON DELETE CASCADE,
        received_at TIMESTAMPTZ NOT NULL,
        kind VARCHAR(8) NOT NULL CHECK (kind IN ('success', 'start', 'fail')),
        exit_status SMALLINT CHECK (exit_status BETWEEN 0 AND 255),
        body BYTEA NOT NULL CHECK (length(body) <= 10240),
        applied BOOLEAN NOT NULL
    )
    """,
    "CREATE INDEX heartbeat_ping_latest ON heartbeat_ping (component_id, id)",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DROP TABLE heartbeat_ping")
    db.execute_sql("DROP TABLE heartbeat_monitor")
    db.execute_sql("DELETE FROM component WHERE type = 'HEARTBEAT'")
    db.execute_sql("ALTER TABLE component DROP CONSTRAINT component_type_check")
    db.execute_sql(
        "ALTER TABLE component ADD CONSTRAINT component_type_check CHECK (type IN ('ENDPOINT', 'METRIC', 'SERVICE'))"
    )
