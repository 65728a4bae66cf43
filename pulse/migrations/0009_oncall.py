"""On-call: people, their schedules (layers and overrides, as the configuration file writes them)
and escalation policies; a component names the policy that pages for its incidents."""

STATEMENTS = [
    """
    CREATE TABLE person (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        key VARCHAR(64) NOT NULL,
        name VARCHAR(200) NOT NULL,
        email VARCHAR(320),
        phone VARCHAR(16),
        push JSONB,
        time_zone VARCHAR(64) NOT NULL DEFAULT 'UTC',
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (organization_id, key)
    )
    """,
    """
    CREATE TABLE oncall_schedule (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        key VARCHAR(64) NOT NULL,
        name VARCHAR(200) NOT NULL,
        time_zone VARCHAR(64) NOT NULL,
        layers JSONB NOT NULL DEFAULT '[]',
        overrides JSONB NOT NULL DEFAULT '[]',
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (organization_id, key)
    )
    """,
    """
    CREATE TABLE escalation_policy (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        key VARCHAR(64) NOT NULL,
        name VARCHAR(200) NOT NULL,
        levels JSONB NOT NULL,
        repeat INTEGER NOT NULL DEFAULT 0 CHECK (repeat BETWEEN 0 AND 9),
        contact TEXT[] NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (organization_id, key)
    )
    """,
    "ALTER TABLE component ADD COLUMN escalation_policy_id BIGINT REFERENCES escalation_policy (id) ON DELETE SET NULL",
    "CREATE INDEX component_escalation_policy ON component (escalation_policy_id)",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("ALTER TABLE component DROP COLUMN escalation_policy_id")
    for table in ("escalation_policy", "oncall_schedule", "person"):
        db.execute_sql(f"DROP TABLE {table}")
