"""Reminders: a component may re-notify its organization's channels while its incident stays open
(``component.repeat_seconds``; ``incident.repeats`` counts those sent), and an escalation policy may
remind whoever acknowledged an alert that it is still not resolved
(``escalation_policy.ack_reminder_seconds``, frozen with the alert; ``oncall_alert.reminders``)."""

STATEMENTS = [
    "ALTER TABLE component ADD COLUMN repeat_seconds INTEGER CHECK (repeat_seconds > 0)",
    "ALTER TABLE incident ADD COLUMN repeats INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE escalation_policy ADD COLUMN ack_reminder_seconds INTEGER CHECK (ack_reminder_seconds > 0)",
    "ALTER TABLE oncall_alert ADD COLUMN reminders INTEGER NOT NULL DEFAULT 0",
    "CREATE INDEX incident_open ON incident (started_at) WHERE resolved_at IS NULL",
    "CREATE INDEX oncall_alert_acknowledged ON oncall_alert (acknowledged_at) WHERE status = 'acknowledged'",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DROP INDEX oncall_alert_acknowledged")
    db.execute_sql("DROP INDEX incident_open")
    db.execute_sql("ALTER TABLE oncall_alert DROP COLUMN reminders")
    db.execute_sql("ALTER TABLE escalation_policy DROP COLUMN ack_reminder_seconds")
    db.execute_sql("ALTER TABLE incident DROP COLUMN repeats")
    db.execute_sql("ALTER TABLE component DROP COLUMN repeat_seconds")
