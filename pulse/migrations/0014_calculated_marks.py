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
    """
    CREATE FUNCTION calculated_mark_fed_by_query() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        fed bigint[] := array(
            SELECT v.calculated_metric_id FROM new_rows n JOIN old_rows o USING (id)
            JOIN calculated_metric_variable v ON v.metrics_query_id = n.id
            WHERE n.last_value_at IS DISTINCT FROM o.last_value_at
        );
    BEGIN
        IF cardinality(fed) > 0 THEN
            PERFORM calculated_mark(fed);
        END IF;
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER marks_calculated AFTER UPDATE ON metrics_query
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION calculated_mark_fed_by_query()
    """,
    """
    CREATE FUNCTION calculated_mark_fed_by_extracted() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        fed bigint[] := array(
            SELECT v.calculated_metric_id FROM new_rows n JOIN old_rows o USING (id)
            JOIN calculated_metric_variable v ON v.extracted_value_id = n.id
            WHERE n.last_at IS DISTINCT FROM o.last_at
        );
    BEGIN
        IF cardinality(fed) > 0 THEN
            PERFORM calculated_mark(fed);
        END IF;
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER marks_calculated AFTER UPDATE ON extracted_value
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION calculated_mark_fed_by_extracted()
    """,
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    for table in ("extracted_value", "metrics_query"):
        db.execute_sql(f"DROP TRIGGER marks_calculated ON {table}")
    for function in ("calculated_mark_fed_by_extracted", "calculated_mark_fed_by_query", "calculated_mark"):
        db.execute_sql(f"DROP FUNCTION {function}")
