"""Honest uptime: a slot nobody checked (workers or scheduler down, locations silent, the database
away) is recorded as an ``uptime_check`` row whose outcome is UNKNOWN once its time is past
(`pulse.uptime.missed`), left out of uptime and counted apart in the rollups (``unknown``).

``component.checking_since`` is the first slot of the component's current grid (set with its first
``next_check_at``, again when it is rescheduled or resumed): its slots are that time plus whole
intervals, and none before it was expected. A component checked already starts its grid at its
next slot, so no slot before this migration is taken for missed."""

STATEMENTS = [
    "ALTER TABLE component ADD COLUMN checking_since TIMESTAMPTZ NULL",
    "UPDATE component SET checking_since = next_check_at",
    "ALTER TABLE component_rollup ADD COLUMN unknown INTEGER NOT NULL DEFAULT 0",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("ALTER TABLE component_rollup DROP COLUMN unknown")
    db.execute_sql("ALTER TABLE component DROP COLUMN checking_since")
