"""Calculated metrics are marked by triggers on the sources' latest values, not by the sources'
statements: an UPDATE of ``metrics_query`` or ``extracted_value`` that moves a latest value's time
marks, at the end of that statement and in its transaction, every calculated metric the value
feeds and those fed by them in turn (`calculated_mark`, also what `pulse apply` calls). The
sources' SQL no longer names calculated metrics (see pulse/calculated/due.py).

The trigger is per statement, with transition tables: one mark per statement, its rows locked in
id order, however many values the statement stores.
"""

QUIET = "interval '1 second'"  # how long a burst must be quiet before its evaluation
MOST_WAIT = "interval '20 seconds'"  # the longest a marked metric waits for its burst to quiet
SLACK = "interval '100 milliseconds'"  # a mark that would move due_at by less writes nothing
_DUE = f"least(coalesce(c.pending_since, now()) + {MOST_WAIT}, now() + {QUIET})"

STATEMENTS = [
    f"""
    CREATE FUNCTION calculated_mark(fed_first bigint[]) RETURNS bigint LANGUAGE plpgsql AS $$
    DECLARE
        marked_count bigint;
    BEGIN
        WITH RECURSIVE fed (id) AS (
            SELECT unnest(fed_first)
            UNION
            SELECT v.calculated_metric_id FROM calculated_metric_variable v JOIN fed ON v.calculated_input_id = fed.id
        ), marked AS (
            UPDATE calculated_metric c SET pending_since = coalesce(c.pending_since, now()), due_at = {_DUE}
            FROM (
                SELECT c.id FROM calculated_metric c JOIN fed USING (id)
                WHERE c.pending_since IS NULL OR c.due_at < {_DUE} - {SLACK}
                ORDER BY c.id
                FOR NO KEY UPDATE OF c
            ) AS locked
            WHERE c.id = locked.id
            RETURNING c.id
        )
        SELECT count(*) INTO marked_count FROM marked;
        RETURN marked_count;
    END
    $$
    """,
    *(
        statement
        for table, variable, moved in (
            ("metrics_query", "metrics_query_id", "last_value_at"),
            ("extracted_value", "extracted_value_id", "last_at"),
        )
        for statement in (
            f"""
    CREATE FUNCTION calculated_mark_fed_by_{table}() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        fed bigint[] := array(
            SELECT v.calculated_metric_id FROM new_rows n JOIN old_rows o USING (id)
            JOIN calculated_metric_variable v ON v.{variable} = n.id
            WHERE n.{moved} IS DISTINCT FROM o.{moved}
        );
    BEGIN
        IF cardinality(fed) > 0 THEN
            PERFORM calculated_mark(fed);
        END IF;
        RETURN NULL;
    END
    $$
    """,
            f"""
    CREATE TRIGGER marks_calculated AFTER UPDATE ON {table}
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION calculated_mark_fed_by_{table}()
    """,
        )
    ),
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    for table in ("extracted_value", "metrics_query"):
        db.execute_sql(f"DROP TRIGGER marks_calculated ON {table}")
        db.execute_sql(f"DROP FUNCTION calculated_mark_fed_by_{table}")
    db.execute_sql("DROP FUNCTION calculated_mark")
