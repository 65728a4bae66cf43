"""On-call alerts: one per incident of a component with an escalation policy, the policy frozen as
it was when the alert opened, the level and round paged last, when the next level is due; each
step on its timeline; pages are notifications to a person, cancelled when the alert is
acknowledged or resolved before they are sent."""

STATEMENTS = [
    """
    CREATE TABLE oncall_alert (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        incident_id BIGINT NOT NULL UNIQUE REFERENCES incident (id) ON DELETE CASCADE,
        component_id BIGINT REFERENCES component (id) ON DELETE SET NULL,
        event_id BIGINT NOT NULL REFERENCES event (id) ON DELETE CASCADE,
        policy JSONB NOT NULL,
        status VARCHAR(16) NOT NULL DEFAULT 'triggered'
            CHECK (status IN ('triggered', 'acknowledged', 'resolved', 'exhausted')),
        level INTEGER NOT NULL DEFAULT 0,
        round INTEGER NOT NULL DEFAULT 1,
        next_escalation_at TIMESTAMPTZ,
        escalation_sent_at TIMESTAMPTZ,
        acknowledged_by VARCHAR(64),
        acknowledged_via VARCHAR(16),
        acknowledged_at TIMESTAMPTZ,
        resolved_at TIMESTAMPTZ,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        CHECK ((status = 'triggered') = (next_escalation_at IS NOT NULL))
    )
    """,
    """
    CREATE INDEX oncall_alert_due ON oncall_alert (next_escalation_at)
     WHERE status = 'triggered' AND escalation_sent_at IS NULL
    """,
    "CREATE INDEX oncall_alert_open ON oncall_alert (created_at) WHERE status <> 'resolved'",
    """
    CREATE TABLE oncall_timeline (
        id BIGSERIAL PRIMARY KEY,
        alert_id BIGINT NOT NULL REFERENCES oncall_alert (id) ON DELETE CASCADE,
        at TIMESTAMPTZ NOT NULL,
        kind VARCHAR(16) NOT NULL,
        level INTEGER,
        round INTEGER,
        person VARCHAR(64),
        channel VARCHAR(16),
        note TEXT NOT NULL DEFAULT ''
    )
    """,
    "CREATE INDEX oncall_timeline_alert ON oncall_timeline (alert_id, id)",
    "ALTER TABLE notification ADD COLUMN person_id BIGINT REFERENCES person (id) ON DELETE SET NULL",
    # A page not sent yet when its alert is acknowledged or resolved is cancelled.
    """
    ALTER TABLE notification DROP CONSTRAINT notification_status_check,
      ADD CONSTRAINT notification_status_check CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'cancelled'))
    """,
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DELETE FROM notification WHERE status = 'cancelled'")
    db.execute_sql(
        "ALTER TABLE notification DROP CONSTRAINT notification_status_check, ADD CONSTRAINT notification_status_check"
        " CHECK (status IN ('pending', 'sending', 'sent', 'failed'))"
    )
    db.execute_sql("ALTER TABLE notification DROP COLUMN person_id")
    for table in ("oncall_timeline", "oncall_alert"):
        db.execute_sql(f"DROP TABLE {table}")
