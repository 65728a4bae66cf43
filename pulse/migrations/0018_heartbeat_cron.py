"""Heartbeat monitors may expect their job at the matches of a cron expression in a time zone
instead of every period (`pulse.heartbeats.deadlines`): one of ``period_seconds`` and ``cron``,
never both. ``last_start_at`` becomes the start of the run in progress (a success or a failure
ping clears it): the starts of runs that finished are cleared, and a run in progress must finish
within the grace from now on (the deadline moves to its start plus the grace, if earlier)."""

STATEMENTS = [
    "ALTER TABLE heartbeat_monitor ALTER COLUMN period_seconds DROP NOT NULL",
    "ALTER TABLE heartbeat_monitor ADD COLUMN cron VARCHAR(100)",
    "ALTER TABLE heartbeat_monitor ADD COLUMN time_zone VARCHAR(64) NOT NULL DEFAULT 'UTC'",
    "ALTER TABLE heartbeat_monitor ADD CONSTRAINT heartbeat_monitor_period_or_cron "
    "CHECK ((period_seconds IS NULL) <> (cron IS NULL))",
    "UPDATE heartbeat_monitor SET last_start_at = NULL WHERE last_start_at <= last_ping_at",
    "UPDATE heartbeat_monitor SET deadline_at = least(deadline_at, last_start_at + grace_seconds * interval '1 s')"
    " WHERE last_start_at IS NOT NULL",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    # A monitor on cron has no period to go back to: its component goes, as 0016's down takes them all.
    db.execute_sql(
        "DELETE FROM component WHERE id IN (SELECT component_id FROM heartbeat_monitor WHERE cron IS NOT NULL)"
    )
    db.execute_sql("ALTER TABLE heartbeat_monitor DROP CONSTRAINT heartbeat_monitor_period_or_cron")
    db.execute_sql("ALTER TABLE heartbeat_monitor DROP COLUMN time_zone")
    db.execute_sql("ALTER TABLE heartbeat_monitor DROP COLUMN cron")
    db.execute_sql("ALTER TABLE heartbeat_monitor ALTER COLUMN period_seconds SET NOT NULL")
