"""Retention: what the daily cleanup deletes, table by table, in steps that each hold their locks
for a moment, so writers keep their pace while it runs.

- The history tables (uptime checks, data points) lose whole days: a day partition is dropped
  once it is past the longest retention of any organization, and once its rows are in the
  rollups (their kind's watermark is past it). Rows past a shorter retention, and those in the
  legacy and default partitions, are deleted owner by owner through the (owner, slot) index, a
  batch at a time.
- The other tables lose rows a batch at a time (`BATCH`), oldest first: what each location found
  of each slot (with the uptime checks' retention), notifications that are
  over, resolved on-call alerts (their timelines with them), events that were sent and have no
  delivery or alert left, rollups, dead-letter records, the cleanup's own history, and the expiry
  warnings of certificates and domains expired for a while (`WARNINGS_KEPT`), and the API's
  idempotency keys once they expire (`pulse.models.api_writes.KEY_LIFETIME`).

Each step is its own statement and transaction, and takes only rows older than their rule when it
runs, so a run can stop anywhere (a crash, its time budget) and the next run simply goes on: a
run is idempotent, and two at once are kept apart by an advisory lock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import zlib
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

from pulse.cleanup import partitions, rollups
from pulse.cleanup.spec import DEFAULTS, seconds_sql
from pulse.db import db
from pulse.models.api_writes import KEY_LIFETIME

logger = logging.getLogger(__name__)

BATCH = 5000  # rows per statement
RUNS_KEPT = timedelta(days=90)  # the cleanup's own history
WARNINGS_KEPT = timedelta(days=30)  # a certificate's expiry warnings, once it has expired
_LOCK = (0x50554C53, zlib.crc32(b"cleanup") & 0x7FFFFFFF)  # the namespace of `pulse.recurring.loop.Turn`'s locks


@dataclasses.dataclass(frozen=True)
class Table:
    """A table cleanup deletes from by age.

    Parameters:
      name: the table; ``column`` the time its rows age from; ``key`` the columns naming a row.
      rule: the retention rule: one of each organization's (`pulse.cleanup.spec`), or, with
        ``kept``, one for the whole table.
      organization: the joins from row ``t`` to its organization ``g``.
      scope: the rows of the table the index on ``column`` covers, if not all.
      extra: what else a row must be to go (a notification that is over...).
      kind: the rollups of a partitioned history table.
    """

    name: str
    column: str
    key: str
    rule: str
    organization: str = ""
    extra: str = ""
    kind: rollups.Kind | None = None
    scope: str = ""
    kept: timedelta | None = None


def _owned(kind: rollups.Kind) -> str:
    return f"JOIN {kind.owners} o ON o.id = t.{kind.owner} JOIN organization g ON g.id = o.organization_id"


_ORGANIZATION = "JOIN organization g ON g.id = t.organization_id"


def tables(dead_letters: timedelta) -> list[Table]:
    """Every table cleanup deletes from, in the order it does (a row before what it refers to);
    ``dead_letters``: how long dead-letter records are kept (`PULSE_DEAD_LETTER_RETENTION_DAYS`)."""
    return [
        *(Table(k.raw, "scheduled_at", f"{k.owner}, scheduled_at", k.rule, _owned(k), kind=k) for k in rollups.KINDS),
        Table("location_check", "scheduled_at", "component_id, scheduled_at, location", "uptime_checks",
              "JOIN component o ON o.id = t.component_id JOIN organization g ON g.id = o.organization_id"),
        Table("notification", "created_at", "id", "notifications", _ORGANIZATION,
              "t.status IN ('sent', 'failed', 'cancelled')"),
        Table("oncall_alert", "resolved_at", "id", "oncall_alerts", _ORGANIZATION, scope="t.status = 'resolved'"),
        Table("alert_event", "received_at", "id", "events",
              "JOIN alert_source s ON s.id = t.source_id JOIN organization g ON g.id = s.organization_id", "t.applied"),
        Table("event", "created_at", "id", "events", _ORGANIZATION,
              "t.sent_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM notification n WHERE n.event_id = t.id)"
              " AND NOT EXISTS (SELECT 1 FROM oncall_alert a WHERE a.event_id = t.id)"),
        *(Table(k.table, "start", f"{k.owner}, period, start", "rollups", _owned(k), scope=f"t.period = '{period}'")
          for k in rollups.KINDS for period in ("hour", "day")),
        Table("failed_message", "failed_at", "id", "dead_letters", kept=dead_letters),
        Table("runaway_message", "last_killed_at", "message_id", "dead_letters", kept=dead_letters),
        Table("cleanup_run", "started_at", "id", "cleanup_runs", extra="t.finished_at IS NOT NULL", kept=RUNS_KEPT),
        Table("certificate_warning", "not_after", "component_id, not_after, threshold_days", "certificate_warnings",
              kept=WARNINGS_KEPT),
        Table("domain_warning", "expires_at", "component_id, expires_at, threshold_days", "domain_warnings",
              kept=WARNINGS_KEPT),
        Table("api_idempotency", "created_at", "token_id, key", "idempotency_keys", kept=KEY_LIFETIME),
    ]  # fmt: skip


@dataclasses.dataclass
class Found:
    """What cleanup deletes (or, in a dry run, would delete) from one table."""

    table: str
    rule: str
    rows: int = 0
    partitions: list[str] = dataclasses.field(default_factory=list)
    bytes: int = 0  # disk the dropped partitions held
    seconds: float = 0.0
    held: str = ""  # why something past its retention was kept for now


@dataclasses.dataclass
class Report:
    tables: list[Found]
    finished: bool = True  # False: the time budget ran out first

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.tables)


class Deadline:
    def __init__(self, budget_s: float) -> None:
        self.at = time.monotonic() + budget_s

    @property
    def passed(self) -> bool:
        return time.monotonic() >= self.at


Count = Callable[[int], None]


def clean(
    now: datetime,
    *,
    dead_letters: timedelta,
    dry_run: bool = False,
    budget_s: float = 600.0,
    deleted: Callable[[str, int], object] | None = None,
) -> Report:
    """Delete what is past its retention at ``now`` (a dry run counts it), for at most
    ``budget_s`` seconds; ``deleted(table, rows)`` is told of each batch as it goes."""
    deadline = Deadline(budget_s)
    report = Report([])
    for table in tables(dead_letters):
        found = next((f for f in report.tables if f.table == table.name), None)  # a rollup table's other period
        if found is None:
            found = Found(table.name, table.rule)
            report.tables.append(found)
        if deadline.passed:
            continue

        def count(rows: int, found: Found = found) -> None:
            found.rows += rows
            if deleted and rows and not dry_run:
                deleted(found.table, rows)

        started = time.monotonic()
        if table.kind is not None:
            _history_table(table, now, found, count, dry_run, deadline)
        else:
            _plain_table(table, now, count, dry_run, deadline)
        found.seconds += time.monotonic() - started
    report.finished = not deadline.passed
    return report


# --- the partitioned history tables --------------------------------------------------------


def _history_table(table: Table, now: datetime, found: Found, count: Count, dry_run: bool, deadline: Deadline) -> None:
    """Drop the day partitions past the longest retention; then delete, owner by owner, the rows
    past a shorter one (whole days of them), and those of the legacy and default partitions."""
    assert table.kind is not None
    kind = table.kind
    watermark = rollups.watermarks()[kind.name]
    longest, shortest = _retentions(table)
    for partition in partitions.partitions(table.name):
        if deadline.passed:
            return
        if partition.upper is not None and partition.upper <= now - longest:
            if watermark is None or partition.upper > watermark or _recorded_after(partition, kind, watermark):
                found.held = f"{partition.name}: waiting for the rollups to take its rows in"
                continue
            rows = partitions.rows(partition)
            found.partitions.append(partition.name)
            found.bytes += _size(partition.name)
            if not dry_run:
                partitions.drop(table.name, partition)
                logger.info("Dropped %s (%d rows).", partition.name, rows)
            count(rows)
        elif watermark is not None and (not partition.day or partition.upper <= now - shortest):  # type: ignore[operator]
            _history_rows(table, partition, now, watermark, count, dry_run, deadline)


def _retentions(table: Table) -> tuple[timedelta, timedelta]:
    """The longest and the shortest retention of the table's rule over every organization."""
    longest, shortest = db.execute_sql(
        f"SELECT max({seconds_sql(table.rule)}), min({seconds_sql(table.rule)}) FROM organization g"
    ).fetchone()
    default = DEFAULTS[table.rule]
    return (
        timedelta(seconds=longest) if longest is not None else default,
        timedelta(seconds=shortest) if shortest is not None else default,
    )


def _recorded_after(partition: partitions.Partition, kind: rollups.Kind, watermark: datetime) -> bool:
    """Whether the partition has a row recorded after the watermark (late: not rolled up yet)."""
    query = f"SELECT EXISTS (SELECT 1 FROM {partition.name} WHERE {kind.recorded} > %s)"
    return bool(db.execute_sql(query, (watermark,)).fetchone()[0])


def _history_rows(
    table: Table,
    partition: partitions.Partition,
    now: datetime,
    watermark: datetime,
    count: Count,
    dry_run: bool,
    deadline: Deadline,
) -> None:
    """Delete, in ``partition``, each owner's rows past its organization's retention that the
    rollups hold, through the (owner, slot) index: in a day partition, only owners whose
    retention the whole day is past."""
    assert table.kind is not None
    kind = table.kind
    cutoff = f"%(now)s - {seconds_sql(table.rule)} * interval '1 second'"
    owners = db.execute_sql(
        f"SELECT o.id, {cutoff} FROM {kind.owners} o JOIN organization g ON g.id = o.organization_id "
        f"WHERE %(upper)s::timestamptz IS NULL OR NOT %(day)s OR {cutoff} >= %(upper)s ORDER BY o.id",
        {"now": now, "upper": partition.upper, "day": partition.day},
    ).fetchall()
    if not owners:
        return
    oldest = max(c for _, c in owners)
    query = f"SELECT EXISTS (SELECT 1 FROM {partition.name} WHERE scheduled_at < %s)"
    if not db.execute_sql(query, (oldest,)).fetchone()[0]:
        return
    expired = f"t.{kind.owner} = %(owner)s AND t.scheduled_at < %(cutoff)s AND t.{kind.recorded} <= %(watermark)s"
    for owner, owner_cutoff in owners:
        values = {"owner": owner, "cutoff": owner_cutoff, "watermark": watermark}
        if dry_run:
            count(db.execute_sql(f"SELECT count(*) FROM {partition.name} t WHERE {expired}", values).fetchone()[0])
            continue
        while True:
            if deadline.passed:
                return
            rows = db.execute_sql(
                f"DELETE FROM {partition.name} WHERE ctid = ANY(ARRAY("
                f"SELECT t.ctid FROM {partition.name} t WHERE {expired} LIMIT {BATCH}))",
                values,
            ).rowcount
            count(rows)
            if rows < BATCH:
                break


def _size(name: str) -> int:
    return int(db.execute_sql("SELECT pg_total_relation_size(%s::regclass)", (name,)).fetchone()[0])


# --- the other tables ----------------------------------------------------------------------


def _plain_table(table: Table, now: datetime, count: Count, dry_run: bool, deadline: Deadline) -> None:
    """Delete the table's rows past retention, oldest first: each statement takes the next
    `BATCH` rows older than the shortest retention through the index on their age, after the last
    one the statement before took (so none reads again what another read, however many rows are
    kept), and deletes those past their organization's retention."""
    if table.kept is None:
        newest = now - _retentions(table)[1]
        expired = f"t.{table.column} < %(now)s - {seconds_sql(table.rule)} * interval '1 second'"
    else:
        newest, expired = now - table.kept, "true"
    doomed = " AND ".join(filter(None, [expired, table.extra]))
    older = f"t.{table.column} < %(newest)s" + (f" AND {table.scope}" if table.scope else "")
    values: dict[str, Any] = {"now": now, "newest": newest}
    if dry_run:
        query = f"SELECT count(*) FROM {table.name} t {table.organization} WHERE {older} AND {doomed}"
        count(db.execute_sql(query, values).fetchone()[0])
        return
    # Each batch goes on after the last row the one before saw, in the order of (age, key): rows
    # of the same age (a broadcast's notifications share their transaction's time) are all seen.
    keys = [column.strip() for column in table.key.split(",")]
    order = ", ".join(f"t.{column}" for column in dict.fromkeys([table.column, *keys]))
    position = ", ".join(f"%(p{i})s" for i in range(order.count(",") + 1))

    def batch(after: bool) -> str:
        since = f" AND t.{table.column} >= %(p0)s AND ({order}) > ({position})" if after else ""
        return f"""
WITH candidates AS (
    SELECT * FROM {table.name} t WHERE {older}{since} ORDER BY {order} LIMIT {BATCH}
), gone AS (
    DELETE FROM {table.name} WHERE ({table.key}) IN (
        SELECT {", ".join(f"t.{key}" for key in keys)} FROM candidates t {table.organization} WHERE {doomed}
    ) RETURNING 1
)
SELECT g.n, c.n, last.*
FROM (SELECT count(*) AS n FROM gone) g, (SELECT count(*) AS n FROM candidates) c
LEFT JOIN LATERAL (SELECT {order} FROM candidates t ORDER BY {order.replace(",", " DESC,")} DESC LIMIT 1) last ON true
"""

    statement = batch(after=False)
    while not deadline.passed:
        deleted, seen, *last = db.execute_sql(statement, values).fetchone()
        count(deleted)
        if seen < BATCH:
            return
        statement = batch(after=True)
        values.update({f"p{i}": value for i, value in enumerate(last)})


@contextlib.contextmanager
def exclusive() -> Iterator[bool]:
    """Whether this is the only cleanup running (a PostgreSQL advisory lock, held on this
    thread's connection until the block ends)."""
    taken = bool(db.execute_sql("SELECT pg_try_advisory_lock(%s, %s)", _LOCK).fetchone()[0])
    try:
        yield taken
    finally:
        if taken:
            db.execute_sql("SELECT pg_advisory_unlock(%s, %s)", _LOCK)
