"""Calculated metrics: a formula over variables, each mapped to one source (a metrics query, an
extracted value, another calculated metric), and one data point per evaluation."""

STATEMENTS = [
    """
    CREATE TABLE calculated_metric (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        component_id BIGINT REFERENCES component (id) ON DELETE SET NULL,
        key VARCHAR(64) NOT NULL,
        name VARCHAR(200) NOT NULL,
        formula TEXT NOT NULL,
        unit VARCHAR(32) NOT NULL DEFAULT '',
        max_age_seconds INTEGER NOT NULL,
        direction VARCHAR(8) NOT NULL DEFAULT 'above' CHECK (direction IN ('above', 'below')),
        warning DOUBLE PRECISION,
        critical DOUBLE PRECISION,
        critical_status VARCHAR(32) NOT NULL DEFAULT 'MAJOR_OUTAGE'
            CHECK (critical_status IN ('PARTIAL_OUTAGE', 'MAJOR_OUTAGE')),
        failure_threshold INTEGER NOT NULL DEFAULT 1,
        success_threshold INTEGER NOT NULL DEFAULT 1,
        no_data VARCHAR(16) NOT NULL DEFAULT 'keep' CHECK (no_data IN ('keep', 'degraded', 'outage')),
        pending_since TIMESTAMPTZ,
        due_at TIMESTAMPTZ,
        sent_at TIMESTAMPTZ,
        state VARCHAR(16) NOT NULL DEFAULT 'unknown'
            CHECK (state IN ('unknown', 'ok', 'warning', 'critical', 'no_data', 'stale')),
        last_value DOUBLE PRECISION,
        last_value_at TIMESTAMPTZ,
        last_note TEXT,
        last_evaluated_at TIMESTAMPTZ,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (organization_id, key)
    )
    """,
    "CREATE INDEX calculated_metric_due_at ON calculated_metric (due_at) WHERE due_at IS NOT NULL",
    "CREATE UNIQUE INDEX calculated_metric_one_per_component ON calculated_metric (component_id)",
    """
    CREATE TABLE calculated_metric_variable (
        id BIGSERIAL PRIMARY KEY,
        calculated_metric_id BIGINT NOT NULL REFERENCES calculated_metric (id) ON DELETE CASCADE,
        name VARCHAR(64) NOT NULL,
        metrics_query_id BIGINT REFERENCES metrics_query (id) ON DELETE CASCADE,
        extracted_value_id BIGINT REFERENCES extracted_value (id) ON DELETE CASCADE,
        calculated_input_id BIGINT REFERENCES calculated_metric (id) ON DELETE CASCADE,
        CHECK (num_nonnulls(metrics_query_id, extracted_value_id, calculated_input_id) = 1),
        UNIQUE (calculated_metric_id, name)
    )
    """,
    "CREATE INDEX calculated_metric_variable_query ON calculated_metric_variable (metrics_query_id)",
    "CREATE INDEX calculated_metric_variable_extracted ON calculated_metric_variable (extracted_value_id)",
    "CREATE INDEX calculated_metric_variable_input ON calculated_metric_variable (calculated_input_id)",
    """
    CREATE TABLE calculated_metric_data_point (
        id BIGSERIAL PRIMARY KEY,
        calculated_metric_id BIGINT NOT NULL REFERENCES calculated_metric (id) ON DELETE CASCADE,
        scheduled_at TIMESTAMPTZ NOT NULL,
        value DOUBLE PRECISION,
        note TEXT,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (calculated_metric_id, scheduled_at)
    )
    """,
    "CREATE INDEX calculated_metric_data_point_created_at ON calculated_metric_data_point USING brin (created_at)",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    for table in ("calculated_metric_data_point", "calculated_metric_variable", "calculated_metric"):
        db.execute_sql(f"DROP TABLE {table}")
