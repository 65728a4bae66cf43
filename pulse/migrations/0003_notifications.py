"""Notifications: organization channels, subscribers, one row per delivery, and shared pacing."""

STATEMENTS = [
    """
    CREATE TABLE notification_channel (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        key VARCHAR(64) NOT NULL,
        type VARCHAR(16) NOT NULL
            CHECK (type IN ('email', 'sms', 'slack', 'discord', 'teams', 'webhook', 'push')),
        settings JSONB NOT NULL DEFAULT '{}',
        events TEXT[] NOT NULL DEFAULT '{}',
        component_ids BIGINT[] NOT NULL DEFAULT '{}',
        enabled BOOLEAN NOT NULL DEFAULT TRUE,
        last_error TEXT,
        last_error_at TIMESTAMPTZ,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (organization_id, key)
    )
    """,
    """
    CREATE TABLE subscriber (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        kind VARCHAR(16) NOT NULL CHECK (kind IN ('email', 'sms', 'webhook', 'push')),
        address TEXT NOT NULL,
        settings JSONB NOT NULL DEFAULT '{}',
        events TEXT[] NOT NULL DEFAULT '{}',
        component_ids BIGINT[] NOT NULL DEFAULT '{}',
        last_error TEXT,
        last_error_at TIMESTAMPTZ,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (organization_id, kind, address)
    )
    """,
    """
    CREATE TABLE notification (
        id BIGSERIAL PRIMARY KEY,
        event_id BIGINT NOT NULL REFERENCES event (id) ON DELETE CASCADE,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        channel_id BIGINT REFERENCES notification_channel (id) ON DELETE SET NULL,
        subscriber_id BIGINT REFERENCES subscriber (id) ON DELETE SET NULL,
        key VARCHAR(32) NOT NULL,
        kind VARCHAR(16) NOT NULL,
        destination TEXT NOT NULL,
        status VARCHAR(16) NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'sent', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        claimed_by VARCHAR(64),
        claimed_at TIMESTAMPTZ,
        last_error TEXT,
        reference TEXT,
        duration_ms INTEGER,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        sent_at TIMESTAMPTZ,
        UNIQUE (event_id, key)
    ) WITH (fillfactor = 80)
    """,
    "CREATE INDEX notification_created_at ON notification (created_at DESC)",
    # Pacing per destination, shared by every worker process; losing it in a crash costs nothing.
    "CREATE UNLOGGED TABLE send_pace (key VARCHAR(128) PRIMARY KEY, next_at TIMESTAMPTZ NOT NULL)",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    for table in ("send_pace", "notification", "subscriber", "notification_channel"):
        db.execute_sql(f"DROP TABLE {table}")
