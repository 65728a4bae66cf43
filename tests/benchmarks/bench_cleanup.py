"""History at 20,000 components: `pulse status` from rollups, and a day of checks deleted while a
writer records 333 checks a second.

    python tests/benchmarks/bench_cleanup.py --components 20000 [--raw-days 1] [--rollup-days 90]

It migrates its own database (pulse_bench_cleanup) and writes, straight into PostgreSQL, N
components checked every minute: ``--raw-days`` days of raw checks up to now (28.8 M rows a day
at 20,000), rolled up by Pulse's own rollup pass (its time is printed), and ``--rollup-days`` of
older hourly and daily rollups. Then:

1. `pulse status`: the whole `pulse status --json` as an operator runs it (median of 5), its
   overview query (`pulse.uptime.overview`, median of 5, in a process of its own) and its start
   (Python's and the imports of `pulse status --help`, median of 5), beside `python -c pass` and
   the query `pulse status` ran before rollups (every raw check of the last 30 days, best of 3),
   in the same run;
2. cleanup: one more day of checks, 91 days old, deleted by Pulse's retention while a writer
   process inserts 333 checks a second (one statement each, as a check records itself), two
   ways: its day partition dropped (what Pulse does), and batched deletes (`BATCH` rows a
   statement, Pulse's code for its other tables) from a copy of the table without partitions.
   For each: the cleanup's time, the writer's insert latency p50 / p99 / max against the writer
   alone just before (goal: p99 within 2x), the disk freed at once and after a VACUUM (and the
   VACUUM's time), and the WAL written.

With ``--grow 10``, `pulse status` is measured again after older raw days and older rollups
give it ten times the history (``--raw-days`` x 10 raw days must fit in ``--rollup-days``: at
2,000 components, 28.8 M raw checks). With ``--skip-cleanup`` the cleanup part is left out.
The database is left in place (``--keep``) or dropped at the end; ``--reuse`` measures again on
the one a run with ``--keep`` left (same ``--components``, ``--raw-days`` and ``--rollup-days``;
with ``--grow``, its history grows again). ``--against DIR`` times `pulse status` of another
checkout too (e.g. main's, in a worktree with its own ``.venv``), turn about with this one's.
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.benchmarks.measure import ROOT, environment, percentile, reset

NAME = "pulse_bench_cleanup"
ENV = environment(NAME)
URL = ENV["PULSE_DATABASE_URL"]
PASS_AGO = timedelta(minutes=5)  # the rollups of `pulse status` as a pass every 5 minutes leaves them, at worst
RATE = 333  # writer inserts per second: 20,000 components checked every minute
CONDITIONS = (
    '[{"condition": "[STATUS] == 200", "success": true, "resolved": "200 == 200"},'
    ' {"condition": "[BODY].status == UP", "success": true, "resolved": "UP == UP"}]'
)
INSERT_HOUR = """
INSERT INTO {table} (component_id, scheduled_at, started_at, checked_at, status_code, response_time_ms, success,
                     outcome, condition_results)
SELECT c, m, m, m + interval '40 ms', 200, 20 + (c * 7 + extract(minute FROM m)::int * 13) %% 180, true,
       CASE WHEN (c + extract(minute FROM m)::int) %% 97 = 0 THEN 'MAJOR_OUTAGE' ELSE 'OPERATIONAL' END, %(conditions)s
FROM generate_series(%(hour)s::timestamptz, %(hour)s::timestamptz + interval '59 minutes', interval '1 minute') m,
     generate_series(1, %(components)s) c
WHERE m < %(end)s
"""
OLD_OVERVIEW = """
SELECT component_id,
       count(*) FILTER (WHERE scheduled_at > %(now)s - interval '24 hours'),
       count(*) FILTER (WHERE scheduled_at > %(now)s - interval '24 hours' AND up),
       count(*) FILTER (WHERE scheduled_at > %(now)s - interval '7 days'),
       count(*) FILTER (WHERE scheduled_at > %(now)s - interval '7 days' AND up),
       count(*), count(*) FILTER (WHERE up)
FROM (SELECT component_id, scheduled_at, outcome IN ('OPERATIONAL', 'DEGRADED_PERFORMANCE') AS up FROM uptime_check
      WHERE scheduled_at > %(now)s - interval '30 days' AND checked_at > %(now)s - interval '30 days 1 hour') checks
GROUP BY component_id
"""


def log(text: str) -> None:
    print(f"{datetime.now(UTC):%H:%M:%S}  {text}", flush=True)


def connect() -> psycopg.Connection:
    return psycopg.connect(URL, autocommit=True)


def hours(start: datetime, end: datetime) -> list[datetime]:
    found = []
    while start < end:
        found.append(start)
        start += timedelta(hours=1)
    return found


def make_partition(table: str, day: datetime) -> None:
    from pulse.cleanup import partitions

    if partitions.day_name(table, day) not in {p.name for p in partitions.partitions(table)}:
        partitions._locked(lambda: partitions._create(table, day))


def write_checks(conn: psycopg.Connection, components: int, start: datetime, end: datetime, table: str) -> None:
    query = sql.SQL(INSERT_HOUR.format(table=table))
    for i, hour in enumerate(hours(start, end)):
        conn.execute(query, {"hour": hour, "end": end, "components": components, "conditions": CONDITIONS})
        if i % 6 == 5:
            log(f"  {table}: {i + 1} hour(s) of checks written")


def write_rollups(conn: psycopg.Connection, start: datetime, end: datetime) -> None:
    """Hourly and daily rollups of every component from ``start`` to ``end`` (whole days), as a
    rollup pass would have left them."""
    for period, step, checks in (("hour", "1 hour", 60), ("day", "1 day", 1440)):
        conn.execute(
            f"INSERT INTO component_rollup (component_id, period, start, checks, operational, degraded, outage,"
            f" maintenance, responses, response_ms_sum, p95_ms, max_ms)"
            f" SELECT c.id, %s, s, %s, %s - 1, 0, 1, 0, %s, %s * 90, 180, 199"
            f" FROM generate_series(%s::timestamptz, %s::timestamptz - interval '{step}', interval '{step}') s,"
            f" component c",
            (period, checks, checks, checks, checks, start, end),
        )
    conn.execute("VACUUM ANALYZE component_rollup")


def generate(components: int, raw_days: int, rollup_days: int, now: datetime) -> None:
    """Components, raw checks (rolled up by Pulse) and older rollups."""
    from pulse.cleanup import rollups

    with connect() as conn:
        conn.execute("INSERT INTO organization (slug, name) VALUES ('bench', 'Bench')")
        conn.execute(
            "INSERT INTO component (organization_id, key, name, url) "
            "SELECT 1, 'c' || g, 'Component ' || g, 'http://127.0.0.1:9/' FROM generate_series(1, %s) g",
            (components,),
        )
        today = now.replace(hour=0, minute=0, second=0, microsecond=0)
        for day in range(raw_days + 1):
            make_partition("uptime_check", today - day * timedelta(days=1))
        end = now.replace(second=0, microsecond=0)
        started = time.monotonic()
        write_checks(conn, components, (end - timedelta(days=raw_days)).replace(minute=0), end, "uptime_check")
        log(f"{components * 1440 * raw_days:,} raw checks in {time.monotonic() - started:.0f} s")
        conn.execute("VACUUM ANALYZE uptime_check")
    started = time.monotonic()
    # As the last pass left them: 5 minutes ago, so the last 6 minutes of checks are read raw.
    progress = rollups.catch_up(rollups.UPTIME, now=now - PASS_AGO, budget_s=86400)
    took = time.monotonic() - started
    log(f"rollup pass over them: {progress.steps} steps, {progress.hours:,} hours, {took:.0f} s "
        f"({components * 1440 * raw_days / took:,.0f} checks/s)")  # fmt: skip
    first = (now - timedelta(days=raw_days)).replace(hour=0, minute=0, second=0, microsecond=0)
    with connect() as conn:
        started = time.monotonic()
        write_rollups(conn, first - timedelta(days=rollup_days), first)
        (rows,) = conn.execute("SELECT count(*) FROM component_rollup").fetchone()
        log(f"{rollup_days} days of older rollups: {rows:,} rollup rows in all, {time.monotonic() - started:.0f} s")


def best(runs: int, work) -> float:
    times = []
    for _ in range(runs):
        started = time.monotonic()
        work()
        times.append(time.monotonic() - started)
    return min(times)


RUNS = 5
QUERY = """
import statistics, sys, time
from pulse.config import get_settings
from pulse.db import setup_database
from pulse.uptime.overview import overview
setup_database(get_settings())
times, rows = [], []
for _ in range(int(sys.argv[1])):
    started = time.monotonic()
    rows = overview()
    times.append(time.monotonic() - started)
print(len(rows), statistics.median(times))
"""


@dataclasses.dataclass
class Checkout:
    """A checkout of Pulse whose `pulse status` is timed: this one, or another with its own .venv."""

    root: Path
    python: str
    command: list[float] = dataclasses.field(default_factory=list)
    start: list[float] = dataclasses.field(default_factory=list)

    def run(self, *args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, **ENV}
        return subprocess.run(
            [self.python, *args], cwd=self.root, env=env, check=True, stdout=subprocess.PIPE, text=True
        )

    def timed(self, into: list[float], *args: str) -> None:
        started = time.monotonic()
        self.run(*args)
        into.append(time.monotonic() - started)


def status(components: int, now: datetime, checkouts: list[Checkout]) -> list[tuple[float, float]]:
    """Each checkout's median `pulse status --json`, its query and its start, turn about; the
    commands' and the queries' medians."""
    from pulse.db import db

    bare: list[float] = []
    medians: list[tuple[float, float]] = []
    for checkout in checkouts:
        checkout.command, checkout.start = [], []
    for _ in range(RUNS):
        for checkout in checkouts:
            checkout.timed(checkout.command, "-m", "pulse.cli", "status", "--json")
            checkout.timed(checkout.start, "-m", "pulse.cli", "status", "--help")
        checkouts[0].timed(bare, "-c", "pass")
    old = best(3, lambda: db.execute_sql(OLD_OVERVIEW, {"now": now}).fetchall())
    log(f"pulse status, {components:,} components; beside it: python -c pass {statistics.median(bare):.3f} s, "
        f"the raw query it ran before {old:.2f} s")  # fmt: skip
    for checkout in checkouts:
        rows, query = checkout.run("-c", QUERY, str(RUNS)).stdout.split()
        assert int(rows) == components, rows
        command, start, query = statistics.median(checkout.command), statistics.median(checkout.start), float(query)
        log(f"  {checkout.root}: pulse status --json {command:.3f} s: its query {query:.3f} s "
            f"({query / command:.0%}), its start {start:.3f} s ({start / command:.0%}), the rest "
            f"{command - query - start:.3f} s; the raw query before: {old / query:.0f}x the query")  # fmt: skip
        medians.append((command, query))
    return medians


def grow(components: int, raw_days: int, rollup_days: int, times: int, now: datetime) -> None:
    """``times`` as much history: older raw days (their rollups are there already, as after a pass)
    and older rollups, so `pulse status` finds ``times`` as many rows of both."""
    first = (now - timedelta(days=raw_days)).replace(hour=0, minute=0, second=0, microsecond=0)
    extra = raw_days * (times - 1)
    if extra > rollup_days:
        raise SystemExit(f"--grow {times}: the older raw days must lie within the --rollup-days ({rollup_days})")
    with connect() as conn:
        started = time.monotonic()
        for day in range(1, extra + 1):
            make_partition("uptime_check", first - day * timedelta(days=1))
        write_checks(conn, components, first - timedelta(days=extra), first, "uptime_check")
        conn.execute("VACUUM ANALYZE uptime_check")
        oldest = first - timedelta(days=rollup_days)
        write_rollups(conn, oldest - timedelta(days=rollup_days * (times - 1)), oldest)
        (checks,) = conn.execute("SELECT count(*) FROM uptime_check").fetchone()
        (rows,) = conn.execute("SELECT count(*) FROM component_rollup").fetchone()
        log(f"{times}x the history: {checks:,} raw checks, {rows:,} rollup rows; {time.monotonic() - started:.0f} s")


def writer(stop, out, table: str, components: int) -> None:
    """Insert RATE checks a second into ``table`` until ``stop``; put each insert's seconds on ``out``."""
    latencies = []
    insert = sql.SQL(
        "INSERT INTO {} (component_id, scheduled_at, started_at, checked_at, status_code, response_time_ms, success,"
        " outcome, condition_results) VALUES (%s, %s, %s, %s, 200, 21, true, 'OPERATIONAL', %s::jsonb)"
        " ON CONFLICT DO NOTHING"
    ).format(sql.Identifier(table))
    with connect() as conn:
        started, i = time.perf_counter(), 0
        while not stop.is_set():
            due = started + i / RATE
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            at = datetime.now(UTC)
            t = time.perf_counter()
            conn.execute(insert, (i % components + 1, at, at, at, CONDITIONS))
            latencies.append(time.perf_counter() - t)
            i += 1
    out.put(latencies)


@dataclasses.dataclass
class Writer:
    table: str
    components: int

    def __enter__(self) -> Writer:
        context = multiprocessing.get_context("spawn")
        self.stop, self.out = context.Event(), context.Queue()
        self.process = context.Process(
            target=writer, args=(self.stop, self.out, self.table, self.components), daemon=True
        )
        self.process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.latencies = self.out.get(timeout=60)
        self.process.join(60)

    def summary(self) -> str:
        ms = [s * 1000 for s in self.latencies]
        p50, p99 = percentile(ms, 0.5), percentile(ms, 0.99)
        return f"p50 {p50:.2f} / p99 {p99:.2f} / max {max(ms):.0f} ms ({len(ms):,} inserts)"


def wal(conn: psycopg.Connection) -> str:
    return conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]


def cleanup(components: int, now: datetime, baseline_s: float) -> None:
    from pulse.cleanup import retention, rollups
    from pulse.models import utcnow

    old = (now - timedelta(days=91)).replace(hour=0, minute=0, second=0, microsecond=0)
    with connect() as conn:
        conn.execute("CREATE TABLE uptime_check_plain (LIKE uptime_check INCLUDING DEFAULTS)")
        conn.execute("ALTER TABLE uptime_check_plain ADD PRIMARY KEY (id), ADD UNIQUE (component_id, scheduled_at)")
        conn.execute("CREATE INDEX ON uptime_check_plain (scheduled_at)")  # what batched deletes go by
        conn.execute("CREATE INDEX ON uptime_check_plain USING brin (checked_at)")
        make_partition("uptime_check", old)
        for table in ("uptime_check", "uptime_check_plain"):
            started = time.monotonic()
            write_checks(conn, components, old, old + timedelta(days=1), table)
            log(f"a day 91 days old in {table}: {time.monotonic() - started:.0f} s")
        conn.execute("VACUUM ANALYZE uptime_check_plain")
        conn.execute("VACUUM ANALYZE uptime_check")
        conn.execute("CHECKPOINT")
    rollups.catch_up(rollups.UPTIME, budget_s=600)  # the writer's rows of the first part

    owned = "JOIN component o ON o.id = t.component_id JOIN organization g ON g.id = o.organization_id"
    plain = retention.Table("uptime_check_plain", "scheduled_at", "id", "uptime_checks", owned)
    ways = {
        "partition dropped": ("uptime_check", lambda: retention.clean(utcnow(), dead_letters=timedelta(days=30))),
        "batched deletes": ("uptime_check_plain", lambda: retention._plain_table(
            plain, utcnow(), lambda rows: None, dry_run=False, deadline=retention.Deadline(86400))),
    }  # fmt: skip
    for way, (table, work) in ways.items():
        with connect() as conn:
            conn.execute("CHECKPOINT")
            with Writer(table, components) as alone:
                time.sleep(baseline_s)
            size, lsn = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0], wal(conn)
            with Writer(table, components) as during:
                time.sleep(1)
                started = time.monotonic()
                work()
                took = time.monotonic() - started
                time.sleep(max(1.0, baseline_s - took))  # the writer measured over as long as alone
            (written,) = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (lsn,)).fetchone()
            freed = size - conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
            started = time.monotonic()
            conn.execute(sql.SQL("VACUUM {}").format(sql.Identifier(table)))
            vacuum = time.monotonic() - started
            after = size - conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        log(f"{way}: {components * 1440:,} rows in {took:.1f} s; writer alone {alone.summary()}, "
            f"during {during.summary()}; freed {max(0, freed) / 2**30:.2f} GiB at once, "
            f"{max(0, after) / 2**30:.2f} GiB after a VACUUM of {vacuum:.1f} s; "
            f"WAL {float(written) / 2**20:,.0f} MiB")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--components", type=int, default=20000)
    parser.add_argument("--raw-days", type=int, default=1)
    parser.add_argument("--rollup-days", type=int, default=90)
    parser.add_argument("--writer-seconds", type=float, default=30.0)
    parser.add_argument("--grow", type=int, default=1, help="Then pulse status with this many times the history.")
    parser.add_argument("--skip-cleanup", action="store_true")
    parser.add_argument("--keep", action="store_true", help="Leave the database in place.")
    parser.add_argument("--reuse", action="store_true", help="Measure on the database a run with --keep left.")
    parser.add_argument("--against", type=Path, help="Time pulse status of this checkout too.")
    args = parser.parse_args()

    checkouts = [Checkout(ROOT, sys.executable)]
    if args.against:
        checkouts.append(Checkout(args.against.resolve(), str(args.against.resolve() / ".venv" / "bin" / "python")))
    if not args.reuse:
        reset(NAME)
    os.environ.update(ENV)
    from pulse.config import get_settings
    from pulse.db import setup_database

    setup_database(get_settings())
    from pulse.db import db

    db.execute_sql("SET statement_timeout = 0")  # the raw query of the baseline reads a day or more of checks
    log(f"{args.components:,} components, {args.raw_days} day(s) of raw checks, {args.rollup_days} days of rollups; "
        f"{os.cpu_count()} cores shared with PostgreSQL")  # fmt: skip
    if args.reuse:  # the run that wrote it left the watermark PASS_AGO and SETTLE before its now
        from pulse.cleanup import rollups

        (watermark,) = db.execute_sql("SELECT watermark FROM rollup_state WHERE kind = 'uptime'").fetchone()
        now = watermark + PASS_AGO + rollups.SETTLE
    else:
        now = datetime.now(UTC)
        generate(args.components, args.raw_days, args.rollup_days, now)
    commands = status(args.components, now, checkouts)
    if args.grow > 1:
        grow(args.components, args.raw_days, args.rollup_days, args.grow, now)
        grown = status(args.components, now, checkouts)
        for checkout, (before, query), (after, grown_query) in zip(checkouts, commands, grown, strict=True):
            log(f"with {args.grow}x the history, pulse status --json of {checkout.root} took {after / before:.2f}x "
                f"its time, its query {grown_query / query:.2f}x")  # fmt: skip
    if not args.skip_cleanup:
        cleanup(args.components, now, args.writer_seconds)
    if not args.keep:
        admin = psycopg.conninfo.make_conninfo(URL, dbname="postgres")
        db.close_all()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(NAME)))


if __name__ == "__main__":
    main()
