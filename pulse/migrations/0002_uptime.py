"""Uptime: extracted values, maintenance windows, the event outbox, and each component's last check."""

STATEMENTS = [
    # When the request began (checked_at is when the outcome was recorded): lag = started_at - scheduled_at.
    "ALTER TABLE uptime_check ADD COLUMN started_at TIMESTAMPTZ",
    "ALTER TABLE component ADD COLUMN extract JSONB NOT NULL DEFAULT '{}'",
    # The latest check applied to the status (by scheduled time), for `pulse status` and late results.
    "ALTER TABLE component ADD COLUMN last_checked_at TIMESTAMPTZ",
    "ALTER TABLE component ADD COLUMN last_response_time_ms INTEGER",
    "ALTER TABLE component ADD COLUMN status_since TIMESTAMPTZ NOT NULL DEFAULT now()",
    """
    CREATE TABLE maintenance_window (
        id BIGSERIAL PRIMARY KEY,
        component_id BIGINT NOT NULL REFERENCES component (id) ON DELETE CASCADE,
        starts_at TIMESTAMPTZ NOT NULL,
        ends_at TIMESTAMPTZ NOT NULL,
        title VARCHAR(200) NOT NULL DEFAULT '',
        CHECK (ends_at > starts_at)
    )
    """,
    "CREATE INDEX maintenance_window_component ON maintenance_window (component_id, ends_at)",
    """
    CREATE TABLE extracted_value (
        id BIGSERIAL PRIMARY KEY,
        component_id BIGINT NOT NULL REFERENCES component (id) ON DELETE CASCADE,
        name VARCHAR(64) NOT NULL,
        path TEXT NOT NULL,
        last_value DOUBLE PRECISION,
        last_at TIMESTAMPTZ,
        UNIQUE (component_id, name)
    )
    """,
    """
    CREATE TABLE extracted_value_data_point (
        id BIGSERIAL PRIMARY KEY,
        extracted_value_id BIGINT NOT NULL REFERENCES extracted_value (id) ON DELETE CASCADE,
        value DOUBLE PRECISION NOT NULL,
        scheduled_at TIMESTAMPTZ NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (extracted_value_id, scheduled_at)
    )
    """,
    "CREATE INDEX extracted_value_data_point_created_at ON extracted_value_data_point USING brin (created_at)",
    """
    CREATE TABLE event (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        component_id BIGINT REFERENCES component (id) ON DELETE SET NULL,
        incident_id BIGINT REFERENCES incident (id) ON DELETE SET NULL,
        type VARCHAR(64) NOT NULL,
        payload JSONB NOT NULL DEFAULT '{}',
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        sent_at TIMESTAMPTZ
    )
    """,
    # The outbox: events written with a change but not yet handed to the notifications queue.
    "CREATE INDEX event_unsent ON event (created_at) WHERE sent_at IS NULL",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    for table in ("event", "extracted_value_data_point", "extracted_value", "maintenance_window"):
        db.execute_sql(f"DROP TABLE {table}")
    for column in ("status_since", "last_response_time_ms", "last_checked_at", "extract"):
        db.execute_sql(f"ALTER TABLE component DROP COLUMN {column}")
    db.execute_sql("ALTER TABLE uptime_check DROP COLUMN started_at")
