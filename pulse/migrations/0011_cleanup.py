"""Cleanup: history partitioned by day, rollups, retention per organization, cleanup runs.

The four high-volume history tables (uptime checks and the data points of metrics, extracted
values and calculated metrics) become tables partitioned by range of ``scheduled_at``: one
partition per UTC day, ``<table>_pYYYYMMDD``, created a week ahead, and ``<table>_default`` for a
row whose day has no partition yet, so an insert never fails. Retention drops whole days.

A table that holds rows keeps them where they are: it becomes the partition ``<table>_legacy``
for everything before the first day partition (tomorrow, or the day after its latest row), and is
dropped once all of it is past retention. No row is copied, none is lost; the one full scan is
PostgreSQL checking that the rows fit the partition's range.

Rollups (hourly and daily, per component, metric, extracted value and calculated metric) are
written by `pulse.cleanup.rollups`, which keeps in ``rollup_state`` how far it has read each table.
"""

from datetime import UTC, timedelta

# table, the foreign key to its owner, the owner table, the name of the unique (owner, slot)
# constraint, the column that says when a row was recorded and the name of its BRIN index.
PARTITIONED = (
    ("uptime_check", "component_id", "component", "uptime_check_component_id_scheduled_at_key", "checked_at"),
    (
        "metric_data_point",
        "metrics_query_id",
        "metrics_query",
        "metric_data_point_metrics_query_id_scheduled_at_key",
        "created_at",
    ),
    (
        "extracted_value_data_point",
        "extracted_value_id",
        "extracted_value",
        "extracted_value_data_point_extracted_value_id_scheduled_at_key",
        "created_at",
    ),
    (
        "calculated_metric_data_point",
        "calculated_metric_id",
        "calculated_metric",
        "calculated_metric_data_point_calculated_metric_id_scheduled_key",
        "created_at",
    ),
)
KINDS = {  # the rollup kind of each partitioned table
    "uptime_check": "uptime",
    "metric_data_point": "metrics",
    "extracted_value_data_point": "extracted",
    "calculated_metric_data_point": "calculated",
}
DAYS_AHEAD = 7

_SERIES_ROLLUP = """
    CREATE TABLE {table} (
        {owner} BIGINT NOT NULL REFERENCES {owner_table} (id) ON DELETE CASCADE,
        period VARCHAR(4) NOT NULL CHECK (period IN ('hour', 'day')),
        start TIMESTAMPTZ NOT NULL,
        points INTEGER NOT NULL,
        count INTEGER NOT NULL,
        min DOUBLE PRECISION,
        max DOUBLE PRECISION,
        sum DOUBLE PRECISION NOT NULL,
        avg DOUBLE PRECISION GENERATED ALWAYS AS (sum / nullif(count, 0)) STORED,
        last DOUBLE PRECISION,
        last_at TIMESTAMPTZ,
        PRIMARY KEY ({owner}, period, start)
    ) WITH (fillfactor = 70)
"""

STATEMENTS = [
    "ALTER TABLE organization ADD COLUMN retention JSONB NOT NULL DEFAULT '{}'",
    # Counts of the checks of one component in one hour or one UTC day. checks = operational +
    # degraded + outage (what each check observed); maintenance counts those scheduled in a
    # maintenance window, whatever they observed. A day's p95 is computed from its raw checks once
    # the day is over (p95_pending until then).
    """
    CREATE TABLE component_rollup (
        component_id BIGINT NOT NULL REFERENCES component (id) ON DELETE CASCADE,
        period VARCHAR(4) NOT NULL CHECK (period IN ('hour', 'day')),
        start TIMESTAMPTZ NOT NULL,
        checks INTEGER NOT NULL,
        operational INTEGER NOT NULL,
        degraded INTEGER NOT NULL,
        outage INTEGER NOT NULL,
        maintenance INTEGER NOT NULL,
        responses INTEGER NOT NULL,
        response_ms_sum BIGINT NOT NULL,
        avg_ms DOUBLE PRECISION GENERATED ALWAYS AS (response_ms_sum::float8 / nullif(responses, 0)) STORED,
        p95_ms INTEGER,
        max_ms INTEGER,
        p95_pending BOOLEAN NOT NULL DEFAULT FALSE,
        PRIMARY KEY (component_id, period, start)
    ) WITH (fillfactor = 70)
    """,  # the current hour's rows are rewritten every few minutes: room for their new versions
    # What `pulse status` reads of each hour and day (an index-only scan), and what retention deletes by.
    "CREATE INDEX component_rollup_start ON component_rollup (period, start)"
    " INCLUDE (component_id, checks, operational, degraded)",
    "CREATE INDEX component_rollup_p95_pending ON component_rollup (start) WHERE p95_pending",
    _SERIES_ROLLUP.format(table="metric_rollup", owner="metrics_query_id", owner_table="metrics_query"),
    "CREATE INDEX metric_rollup_start ON metric_rollup (period, start)",
    _SERIES_ROLLUP.format(table="extracted_rollup", owner="extracted_value_id", owner_table="extracted_value"),
    "CREATE INDEX extracted_rollup_start ON extracted_rollup (period, start)",
    _SERIES_ROLLUP.format(table="calculated_rollup", owner="calculated_metric_id", owner_table="calculated_metric"),
    "CREATE INDEX calculated_rollup_start ON calculated_rollup (period, start)",
    # Rows of a kind recorded at or before the watermark are in its rollups, later ones not yet
    # (none yet while it is NULL).
    """
    CREATE TABLE rollup_state (
        kind VARCHAR(16) PRIMARY KEY,
        watermark TIMESTAMPTZ,
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )
    """,
    """
    CREATE TABLE cleanup_run (
        id BIGSERIAL PRIMARY KEY,
        started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        finished_at TIMESTAMPTZ,
        succeeded BOOLEAN,
        deleted JSONB NOT NULL DEFAULT '{}',
        error TEXT
    )
    """,
    "CREATE INDEX cleanup_run_succeeded ON cleanup_run (finished_at) WHERE succeeded",
    # What retention deletes by age.
    "CREATE INDEX event_created_at ON event (created_at)",
    "CREATE INDEX oncall_alert_event ON oncall_alert (event_id)",
    "CREATE INDEX failed_message_failed_at ON failed_message (failed_at)",
    "CREATE INDEX oncall_alert_resolved_at ON oncall_alert (resolved_at) WHERE status = 'resolved'",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)
    for table, owner, owner_table, unique, recorded in PARTITIONED:
        _partition(db, table, owner, owner_table, unique, recorded)


def _partition(db, table, owner, owner_table, unique, recorded):
    first_slot, latest_slot, first_recorded = db.execute_sql(
        f"SELECT min(scheduled_at), max(scheduled_at), min({recorded}) FROM {table}"
    ).fetchone()
    legacy = first_slot is not None
    if legacy:
        for old, new in (
            (f"{table}_pkey", f"{table}_legacy_pkey"),
            (unique, f"{table}_legacy_key"),
            (f"{table}_{owner}_fkey", f"{table}_legacy_{owner}_fkey"),
        ):
            db.execute_sql(f"ALTER TABLE {table} RENAME CONSTRAINT {old} TO {new}")
        db.execute_sql(f"ALTER INDEX {table}_{recorded} RENAME TO {table}_legacy_{recorded}")
        db.execute_sql(f"ALTER TABLE {table} RENAME TO {table}_legacy")
        source = f"{table}_legacy"
    else:
        db.execute_sql(f"ALTER TABLE {table} RENAME TO {table}_old")
        source = f"{table}_old"
    db.execute_sql(f"CREATE TABLE {table} (LIKE {source} INCLUDING DEFAULTS) PARTITION BY RANGE (scheduled_at)")
    db.execute_sql(f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}.id")
    if not legacy:
        db.execute_sql(f"DROP TABLE {source}")
    db.execute_sql(f"ALTER TABLE {table} ADD CONSTRAINT {unique} UNIQUE ({owner}, scheduled_at)")
    db.execute_sql(
        f"ALTER TABLE {table} ADD CONSTRAINT {table}_{owner}_fkey FOREIGN KEY ({owner}) "
        f"REFERENCES {owner_table} (id) ON DELETE CASCADE"
    )
    db.execute_sql(f"CREATE INDEX {table}_{recorded} ON {table} USING brin ({recorded})")
    db.execute_sql(f"CREATE INDEX {table}_scheduled_at ON {table} USING brin (scheduled_at)")
    (first_day,) = db.execute_sql(
        "SELECT date_trunc('day', greatest(%s, now()), 'UTC') + interval '1 day'", (latest_slot,)
    ).fetchone()
    if legacy:
        db.execute_sql(
            f"ALTER TABLE {table} ATTACH PARTITION {table}_legacy FOR VALUES FROM (MINVALUE) TO ({_at(first_day)})"
        )
    else:
        (first_day,) = db.execute_sql("SELECT date_trunc('day', now(), 'UTC')").fetchone()
    (days,) = db.execute_sql(
        "SELECT array_agg(d ORDER BY d) FROM generate_series(%s::timestamptz, "
        "date_trunc('day', now(), 'UTC') + %s * interval '1 day', interval '1 day') d",
        (first_day, DAYS_AHEAD),
    ).fetchone()
    for day in days or []:
        db.execute_sql(
            f"CREATE TABLE {table}_p{day:%Y%m%d} PARTITION OF {table} "
            f"FOR VALUES FROM ({_at(day)}) TO ({_at(day + timedelta(days=1))})"
        )
    db.execute_sql(f"CREATE TABLE {table}_default PARTITION OF {table} DEFAULT")
    # Rollups start from the oldest row kept (an empty table: from its first row, whenever it comes).
    db.execute_sql(
        "INSERT INTO rollup_state (kind, watermark) VALUES (%s, %s::timestamptz - interval '1 microsecond')",
        (KINDS[table], first_recorded),
    )


def _at(moment):
    """A timestamp as SQL text (DDL takes no parameters)."""
    return f"'{moment.astimezone(UTC).isoformat()}'"


def down(migrator, db):
    for table, owner, owner_table, unique, recorded in PARTITIONED:
        db.execute_sql(f"CREATE TABLE {table}_plain (LIKE {table} INCLUDING DEFAULTS)")
        db.execute_sql(f"INSERT INTO {table}_plain SELECT * FROM {table}")
        db.execute_sql(f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}_plain.id")
        db.execute_sql(f"DROP TABLE {table}")
        db.execute_sql(f"ALTER TABLE {table}_plain RENAME TO {table}")
        db.execute_sql(f"ALTER TABLE {table} ADD PRIMARY KEY (id)")
        db.execute_sql(f"ALTER TABLE {table} ADD CONSTRAINT {unique} UNIQUE ({owner}, scheduled_at)")
        db.execute_sql(
            f"ALTER TABLE {table} ADD CONSTRAINT {table}_{owner}_fkey FOREIGN KEY ({owner}) "
            f"REFERENCES {owner_table} (id) ON DELETE CASCADE"
        )
        db.execute_sql(f"CREATE INDEX {table}_{recorded} ON {table} USING brin ({recorded})")
    for index in ("oncall_alert_resolved_at", "failed_message_failed_at", "oncall_alert_event", "event_created_at"):
        db.execute_sql(f"DROP INDEX {index}")
    for table in ("cleanup_run", "rollup_state", "calculated_rollup", "extracted_rollup", "metric_rollup"):
        db.execute_sql(f"DROP TABLE {table}")
    db.execute_sql("DROP TABLE component_rollup")
    db.execute_sql("ALTER TABLE organization DROP COLUMN retention")
