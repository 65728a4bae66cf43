"""Metrics: monitoring integrations, the queries polled through them, and one data point per poll."""

STATEMENTS = [
    """
    CREATE TABLE integration (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        key VARCHAR(64) NOT NULL,
        type VARCHAR(16) NOT NULL CHECK (type IN ('prometheus', 'datadog', 'newrelic', 'grafana', 'pingdom')),
        settings JSONB NOT NULL DEFAULT '{}',
        last_error TEXT,
        last_error_at TIMESTAMPTZ,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (organization_id, key)
    )
    """,
    """
    CREATE TABLE metrics_query (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        integration_id BIGINT NOT NULL REFERENCES integration (id) ON DELETE CASCADE,
        component_id BIGINT REFERENCES component (id) ON DELETE SET NULL,
        key VARCHAR(64) NOT NULL,
        name VARCHAR(200) NOT NULL,
        query TEXT NOT NULL,
        options JSONB NOT NULL DEFAULT '{}',
        unit VARCHAR(32) NOT NULL DEFAULT '',
        interval_seconds INTEGER NOT NULL DEFAULT 60,
        direction VARCHAR(8) NOT NULL DEFAULT 'above' CHECK (direction IN ('above', 'below')),
        warning DOUBLE PRECISION,
        critical DOUBLE PRECISION,
        critical_status VARCHAR(32) NOT NULL DEFAULT 'MAJOR_OUTAGE'
            CHECK (critical_status IN ('PARTIAL_OUTAGE', 'MAJOR_OUTAGE')),
        failure_threshold INTEGER NOT NULL DEFAULT 1,
        success_threshold INTEGER NOT NULL DEFAULT 1,
        no_data VARCHAR(16) NOT NULL DEFAULT 'keep' CHECK (no_data IN ('keep', 'degraded', 'outage')),
        paused BOOLEAN NOT NULL DEFAULT FALSE,
        next_poll_at TIMESTAMPTZ,
        state VARCHAR(16) NOT NULL DEFAULT 'unknown'
            CHECK (state IN ('unknown', 'ok', 'warning', 'critical', 'no_data')),
        last_value DOUBLE PRECISION,
        last_value_at TIMESTAMPTZ,
        last_polled_at TIMESTAMPTZ,
        last_error TEXT,
        last_error_at TIMESTAMPTZ,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (organization_id, key)
    )
    """,
    "CREATE INDEX metrics_query_next_poll_at ON metrics_query (next_poll_at) WHERE NOT paused",
    "CREATE UNIQUE INDEX metrics_query_one_per_component ON metrics_query (component_id)",
    """
    CREATE TABLE metric_data_point (
        id BIGSERIAL PRIMARY KEY,
        metrics_query_id BIGINT NOT NULL REFERENCES metrics_query (id) ON DELETE CASCADE,
        scheduled_at TIMESTAMPTZ NOT NULL,
        value DOUBLE PRECISION,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (metrics_query_id, scheduled_at)
    )
    """,
    "CREATE INDEX metric_data_point_created_at ON metric_data_point USING brin (created_at)",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    for table in ("metric_data_point", "metrics_query", "integration"):
        db.execute_sql(f"DROP TABLE {table}")
