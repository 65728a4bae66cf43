"""Checks from several locations (`pulse.locations`): a component's ``locations`` (empty: checked
by the central workers, as before) and ``quorum`` (NULL: a majority of them).

``location_check`` holds what each location found of each slot, one row per (component, slot,
location): its status seen, or that it abstained (its canaries failed), or that it did not answer
in time (``seen`` NULL, not abstained). The slot's verdict is the ``uptime_check`` row, as for any
check. ``location_slot`` holds the slots sent to locations whose verdict is not taken yet, each
with the time by which it is taken with the votes that came (``decide_by``). ``location`` holds
each location's latest word: when its last results came, and whether its canaries failed (it
abstains), for the gauges operators alert on (`pulse.locations.gauges`)."""

STATEMENTS = [
    "ALTER TABLE component ADD COLUMN locations TEXT[] NOT NULL DEFAULT '{}'",
    "ALTER TABLE component ADD COLUMN quorum INTEGER NULL CHECK (quorum > 0)",
    """
    CREATE TABLE location_check (
        component_id BIGINT NOT NULL REFERENCES component (id) ON DELETE CASCADE,
        scheduled_at TIMESTAMPTZ NOT NULL,
        location TEXT NOT NULL,
        started_at TIMESTAMPTZ NULL,
        checked_at TIMESTAMPTZ NOT NULL,
        seen TEXT NULL,
        abstained BOOLEAN NOT NULL DEFAULT FALSE,
        response_time_ms INTEGER NULL,
        status_code INTEGER NULL,
        reason TEXT NULL,
        PRIMARY KEY (component_id, scheduled_at, location)
    )
    """,
    "CREATE INDEX location_check_scheduled_at ON location_check (scheduled_at)",
    """
    CREATE TABLE location_slot (
        component_id BIGINT NOT NULL REFERENCES component (id) ON DELETE CASCADE,
        scheduled_at TIMESTAMPTZ NOT NULL,
        decide_by TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (component_id, scheduled_at)
    )
    """,
    "CREATE INDEX location_slot_decide_by ON location_slot (decide_by)",
    """
    CREATE TABLE location (
        name TEXT PRIMARY KEY,
        last_result_at TIMESTAMPTZ NOT NULL,
        abstaining_since TIMESTAMPTZ NULL
    )
    """,
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DROP TABLE location")
    db.execute_sql("DROP TABLE location_slot")
    db.execute_sql("DROP TABLE location_check")
    db.execute_sql("ALTER TABLE component DROP COLUMN quorum")
    db.execute_sql("ALTER TABLE component DROP COLUMN locations")
