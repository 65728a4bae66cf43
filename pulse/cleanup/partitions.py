"""Day partitions of the history tables (see migration 0011): ``<table>_pYYYYMMDD`` holds the rows
scheduled on that UTC day, ``<table>_default`` any row whose day has no partition (so an insert
never fails), ``<table>_legacy`` the rows the table held before it was partitioned.

Partitions are made `AHEAD` days ahead by every cleanup run and rollup pass, so the default
partition stays empty; a row that lands there anyway (a clock far off, a test's old times) is
moved into its day's partition when that is made. Dropping a partition frees its disk at once,
with no row deleted one by one, no bloat and no vacuum.

Creating or detaching a partition takes a brief exclusive lock on the table, which queues the
writers behind any query still reading it: each attempt waits at most `LOCK_TIMEOUT`, and is
tried again after a pause, so writers are held no longer than that.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import peewee

from pulse.db import db

logger = logging.getLogger(__name__)

TABLES = ("uptime_check", "metric_data_point", "extracted_value_data_point", "calculated_metric_data_point")
AHEAD = 7  # days
LOCK_TIMEOUT = "200ms"
ATTEMPTS = 20
PAUSE_S = 0.5
_DAY = re.compile(r"_p(\d{8})$")
_LEGACY_UPPER = re.compile(r"TO \('([^']+)'\)")


@dataclasses.dataclass(frozen=True)
class Partition:
    """A partition: rows scheduled from ``lower`` (None: any time before) to ``upper`` (None: the
    default partition, any time without a partition of its own)."""

    name: str
    lower: datetime | None
    upper: datetime | None

    @property
    def day(self) -> bool:
        return _DAY.search(self.name) is not None


def partitions(table: str) -> list[Partition]:
    """The table's partitions, oldest first, the default one last."""
    rows = db.execute_sql(
        "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
        "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = %s::regclass",
        (table,),
    ).fetchall()
    found = []
    for name, bound in rows:
        day = _DAY.search(name)
        if day:
            lower = datetime.strptime(day.group(1), "%Y%m%d").replace(tzinfo=UTC)
            found.append(Partition(name, lower, lower + timedelta(days=1)))
        elif bound == "DEFAULT":
            found.append(Partition(name, None, None))
        else:  # the legacy partition: FROM (MINVALUE) TO ('...')
            (upper,) = db.execute_sql(
                "SELECT %s::timestamptz",
                (_LEGACY_UPPER.search(bound).group(1),),  # type: ignore[union-attr]
            ).fetchone()
            found.append(Partition(name, None, upper))
    far = datetime.max.replace(tzinfo=UTC)
    return sorted(found, key=lambda p: (p.upper is None, p.upper or far))


def day_name(table: str, day: datetime) -> str:
    return f"{table}_p{day:%Y%m%d}"


def ensure(table: str, now: datetime) -> list[str]:
    """Make the partitions of today and the `AHEAD` days after it that are missing; returns their names."""
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    existing = {p.name for p in partitions(table)}
    made = []
    for offset in range(AHEAD + 1):
        day = today + timedelta(days=offset)
        if day_name(table, day) not in existing:
            _locked(functools.partial(_create, table, day))
            made.append(day_name(table, day))
    if made:
        logger.info("Made partition(s) %s.", ", ".join(made))
    return made


def summarize(table: str, column: str, now: datetime, days: int = 31) -> int:
    """Summarize the BRIN ranges on ``column`` not summarized yet in the day partitions of the
    ``days`` days before today, which are over; returns how many. VACUUM leaves a partition's last
    block range unsummarized (it may still grow), and a BRIN scan reads the pages of every
    unsummarized range: `pulse.uptime.overview` looks for the checks recorded since the last
    rollup pass in every partition of the last 30 days, and would read such pages in each (on
    today's partition, where the checks are written, ranges are left to VACUUM). A row added to a
    range later widens its summary."""
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    closed = {day_name(table, today - timedelta(days=offset)) for offset in range(1, days + 1)}
    indexes = db.execute_sql(
        "SELECT x.inhrelid::regclass::text, c.relname FROM pg_inherits x "
        "JOIN pg_index i ON i.indexrelid = x.inhrelid JOIN pg_class c ON c.oid = i.indrelid "
        "WHERE x.inhparent = %s::regclass",
        (f"{table}_{column}",),
    ).fetchall()
    summarized = 0
    for index, partition in indexes:
        if partition in closed:
            summarized += db.execute_sql("SELECT brin_summarize_new_values(%s::regclass)", (index,)).fetchone()[0]
    return summarized


def _create(table: str, day: datetime) -> None:
    """Make a day's partition; rows of that day in the default partition move into it."""
    name, bounds = day_name(table, day), f"FROM ({_at(day)}) TO ({_at(day + timedelta(days=1))})"
    default = f"{table}_default"
    stray = db.execute_sql(
        f"SELECT EXISTS (SELECT 1 FROM {default} WHERE scheduled_at >= %s AND scheduled_at < %s)",
        (day, day + timedelta(days=1)),
    ).fetchone()[0]
    if not stray:
        db.execute_sql(f"CREATE TABLE {name} PARTITION OF {table} FOR VALUES {bounds}")
        return
    db.execute_sql(f"LOCK TABLE {default} IN SHARE ROW EXCLUSIVE MODE")  # no new row in it meanwhile
    db.execute_sql(f"CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS)")
    moved = db.execute_sql(
        f"WITH moved AS (DELETE FROM {default} WHERE scheduled_at >= %s AND scheduled_at < %s RETURNING *) "
        f"INSERT INTO {name} SELECT * FROM moved",
        (day, day + timedelta(days=1)),
    ).rowcount
    db.execute_sql(f"ALTER TABLE {table} ATTACH PARTITION {name} FOR VALUES {bounds}")
    logger.info("Moved %d row(s) of %s from %s into %s.", moved, f"{day:%Y-%m-%d}", default, name)


def drop(table: str, partition: Partition) -> None:
    """Drop a partition and its rows: detached first (a moment's lock on the table), then dropped
    on its own, so writers do not wait while its files are removed (a day of checks took 0.27 s)."""
    _locked(lambda: db.execute_sql(f"ALTER TABLE {table} DETACH PARTITION {partition.name}"))
    db.execute_sql(f"DROP TABLE {partition.name}")


def rows(partition: Partition) -> int:
    """How many rows a partition holds: PostgreSQL's estimate once it has analyzed it (counting
    a day of checks reads all of it), else a count."""
    (estimate,) = db.execute_sql(
        "SELECT reltuples FROM pg_class WHERE oid = %s::regclass", (partition.name,)
    ).fetchone()
    if estimate >= 0:
        return int(estimate)
    return int(db.execute_sql(f"SELECT count(*) FROM {partition.name}").fetchone()[0])


def _locked(work: Callable[[], object]) -> None:
    """Run ``work()`` in a transaction that waits at most `LOCK_TIMEOUT` for its locks, trying
    again after `PAUSE_S` up to `ATTEMPTS` times."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            with db.atomic():
                db.execute_sql(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
                work()
            return
        except peewee.OperationalError as e:
            if "lock timeout" not in str(e) or attempt == ATTEMPTS:
                raise
            time.sleep(PAUSE_S)


def _at(moment: datetime) -> str:
    """A time as SQL text (DDL takes no parameters)."""
    return f"'{moment.astimezone(UTC).isoformat()}'"
