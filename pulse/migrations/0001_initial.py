"""Organizations, components, uptime checks, incidents with updates, failed messages, heartbeats."""

STATEMENTS = [
    """
    CREATE TABLE organization (
        id BIGSERIAL PRIMARY KEY,
        slug VARCHAR(64) NOT NULL UNIQUE,
        name VARCHAR(200) NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )
    """,
    """
    CREATE TABLE component (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        key VARCHAR(64) NOT NULL,
        name VARCHAR(200) NOT NULL,
        type VARCHAR(16) NOT NULL DEFAULT 'ENDPOINT'
            CHECK (type IN ('ENDPOINT', 'METRIC', 'SERVICE')),
        status VARCHAR(32) NOT NULL DEFAULT 'OPERATIONAL'
            CHECK (status IN ('OPERATIONAL', 'DEGRADED_PERFORMANCE', 'PARTIAL_OUTAGE',
                              'MAJOR_OUTAGE', 'UNDER_MAINTENANCE')),
        url TEXT,
        method VARCHAR(8) NOT NULL DEFAULT 'GET',
        headers JSONB NOT NULL DEFAULT '{}',
        body TEXT,
        interval_seconds INTEGER NOT NULL DEFAULT 60 CHECK (interval_seconds BETWEEN 15 AND 86400),
        timeout_ms INTEGER NOT NULL DEFAULT 10000 CHECK (timeout_ms > 0),
        conditions JSONB NOT NULL DEFAULT '[]',
        failure_threshold INTEGER NOT NULL DEFAULT 3 CHECK (failure_threshold >= 1),
        success_threshold INTEGER NOT NULL DEFAULT 2 CHECK (success_threshold >= 1),
        auto_incident BOOLEAN NOT NULL DEFAULT TRUE,
        paused BOOLEAN NOT NULL DEFAULT FALSE,
        next_check_at TIMESTAMPTZ,
        consecutive_failures INTEGER NOT NULL DEFAULT 0,
        consecutive_successes INTEGER NOT NULL DEFAULT 0,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (organization_id, key)
    ) WITH (fillfactor = 70)
    """,  # every check updates its component: room in each page keeps those updates HOT
    "CREATE INDEX component_due ON component (next_check_at) WHERE type = 'ENDPOINT' AND NOT paused",
    """
    CREATE TABLE uptime_check (
        id BIGSERIAL PRIMARY KEY,
        component_id BIGINT NOT NULL REFERENCES component (id) ON DELETE CASCADE,
        scheduled_at TIMESTAMPTZ NOT NULL,
        checked_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        status_code INTEGER,
        response_time_ms INTEGER,
        success BOOLEAN NOT NULL,
        outcome VARCHAR(32) NOT NULL,
        error TEXT,
        condition_results JSONB NOT NULL DEFAULT '[]',
        UNIQUE (component_id, scheduled_at)
    )
    """,
    # Rows arrive in time order: a BRIN index finds old ones for retention at almost no cost per insert.
    "CREATE INDEX uptime_check_checked_at ON uptime_check USING brin (checked_at)",
    """
    CREATE TABLE incident (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        component_id BIGINT REFERENCES component (id) ON DELETE SET NULL,
        title VARCHAR(300) NOT NULL,
        status VARCHAR(16) NOT NULL DEFAULT 'INVESTIGATING'
            CHECK (status IN ('INVESTIGATING', 'IDENTIFIED', 'MONITORING', 'RESOLVED')),
        impact VARCHAR(32) NOT NULL DEFAULT 'MAJOR_OUTAGE',
        automatic BOOLEAN NOT NULL DEFAULT FALSE,
        started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        resolved_at TIMESTAMPTZ
    )
    """,
    # At most one open incident per component.
    "CREATE UNIQUE INDEX incident_one_open ON incident (component_id) WHERE resolved_at IS NULL",
    """
    CREATE TABLE incident_update (
        id BIGSERIAL PRIMARY KEY,
        incident_id BIGINT NOT NULL REFERENCES incident (id) ON DELETE CASCADE,
        status VARCHAR(16) NOT NULL,
        message TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX incident_update_incident ON incident_update (incident_id)",
    """
    CREATE TABLE failed_message (
        id BIGSERIAL PRIMARY KEY,
        message_id VARCHAR(64) NOT NULL UNIQUE,
        queue_name VARCHAR(64) NOT NULL,
        actor_name VARCHAR(128) NOT NULL,
        args JSONB NOT NULL DEFAULT '[]',
        kwargs JSONB NOT NULL DEFAULT '{}',
        options JSONB NOT NULL DEFAULT '{}',
        message_timestamp BIGINT,
        error_type VARCHAR(128) NOT NULL,
        error_message TEXT NOT NULL,
        traceback TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 1,
        failed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        requeued_at TIMESTAMPTZ,
        requeue_count INTEGER NOT NULL DEFAULT 0
    )
    """,
    "CREATE INDEX failed_message_pending ON failed_message (failed_at) WHERE requeued_at IS NULL",
    """
    CREATE TABLE heartbeat (
        name VARCHAR(64) PRIMARY KEY,
        beat_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )
    """,
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    for table in (
        "heartbeat",
        "failed_message",
        "incident_update",
        "incident",
        "uptime_check",
        "component",
        "organization",
    ):
        db.execute_sql(f"DROP TABLE {table}")
