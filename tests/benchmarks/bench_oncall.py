"""On-call escalations at volume: N open alerts whose level-1 waits end spread over M minutes.

    python tests/benchmarks/bench_oncall.py --alerts 10000 --minutes 10

It migrates its own database (pulse_bench_oncall) and vhost, writes N triggered alerts straight
into PostgreSQL (each of its own incident and component, policy: level 1 then level 2, one person
paged by email at each), due evenly over M minutes from 45 s after the start, then runs
`dramatiq pulse.actors -Q oncall` (2 processes x 8 threads: the escalation loop and `escalate`)
and `periodiq pulse.actors`, and waits until every alert is at level 2. It prints:

- lateness: each escalation's time on its timeline minus its due time, p50, p99 and max
  (goal: p99 <= 1 s);
- missed (an alert not at level 2) and doubled (an alert escalated twice, or paged twice at
  level 2: more than one page row of level 2);
- CPU per escalation of the workers and scheduler, of RabbitMQ (a node of the benchmark's own), and
  of PostgreSQL (the backends of the benchmark's database), over the window,
  and the same less what those processes use doing nothing (measured for 30 s before the first
  deadline): at 17 escalations a second the idle cost of 16 waiting threads is a large share.

The pages are written and their `send` messages published, but not delivered (no worker consumes
the notifications queue): the delivery is `bench_notifications`' subject. Beside it, in the same
run, the bare database work an escalation needs, in a plain loop on one connection: the guarded
update of the alert and the insert of its page, one transaction each; the ratio of Pulse's CPU per
escalation (all processes, less idle) to that loop's (client and PostgreSQL).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.benchmarks.measure import (
    OWN_BROKER,
    Tracked,
    backends,
    cpu_seconds,
    environment,
    own_rabbitmq,
    percentile,
    reset,
    start_pulse,
    stop_pulse,
    tree,
)
from tests.support.worker import free_port

NAME = "pulse_bench_oncall"
ENV = environment(NAME, OWN_BROKER)
LEAD = timedelta(seconds=45)  # the first deadline after the start: the workers' loop runs well before then
POLICY = {
    "key": "bench",
    "name": "Bench",
    "levels": [
        {"targets": [{"person": "oncall"}], "wait_seconds": 600},
        {"targets": [{"person": "oncall"}], "wait_seconds": 600},
    ],
    "repeat": 0,
    "contact": ["email"],
}
SETUP = [
    "INSERT INTO organization (slug, name) VALUES ('bench', 'Bench')",
    """INSERT INTO person (organization_id, key, name, email)
       SELECT id, 'oncall', 'On call', 'oncall@bench.example' FROM organization""",
    """INSERT INTO escalation_policy (organization_id, key, name, levels, repeat, contact)
       SELECT id, 'bench', 'Bench', %(levels)s, 0, '{email}' FROM organization""",
    """INSERT INTO component (organization_id, key, name, type, escalation_policy_id)
       SELECT o.id, 'c' || n, 'C' || n, 'SERVICE', p.id
         FROM organization o, escalation_policy p, generate_series(1, %(alerts)s) n""",
    """INSERT INTO incident (organization_id, component_id, title, automatic, started_at)
       SELECT organization_id, id, name || ' down', true, now() FROM component""",
    """INSERT INTO event (organization_id, component_id, incident_id, type, payload, created_at, sent_at)
       SELECT organization_id, component_id, id, 'oncall.page', '{}', now(), now() FROM incident""",
    """INSERT INTO oncall_alert (organization_id, incident_id, component_id, event_id, policy, status, level,
                                round, next_escalation_at)
       SELECT organization_id, incident_id, component_id, id, %(policy)s, 'triggered', 1, 1,
              %(first)s::timestamptz + (row_number() OVER (ORDER BY id) - 1) * %(spacing)s::interval
         FROM event""",
]
# Alerts escalated from level 1 twice, or paged twice at level 2. (The first alerts' level-2 waits
# end before the run does: their second escalation, to exhausted, is not a double.)
DOUBLED = """
SELECT count(*) FROM (
    SELECT alert_id FROM oncall_timeline WHERE kind = 'escalated' AND level = 1 GROUP BY alert_id HAVING count(*) > 1
    UNION ALL
    SELECT event_id FROM notification WHERE key LIKE '2.%%' GROUP BY event_id HAVING count(*) > 1
) d
"""
IDLE_S = 30  # seconds of CPU measured before the first deadline: what the processes use doing nothing
# What an escalation must do at the least: move the alert from the level it expects, write its page.
BARE = """
WITH moved AS (
    UPDATE bare_alert SET level = 2, next_escalation_at = now() + interval '10 minutes'
     WHERE id = %(id)s AND status = 'triggered' AND level = 1 AND round = 1
 RETURNING id
)
INSERT INTO bare_page (alert_id, key) SELECT id, '2.1.1.email' FROM moved
"""


def setup(conn: psycopg.Connection, alerts: int, first: datetime, spacing: timedelta) -> dict[int, datetime]:
    """The alerts, written; each one's due time by id."""
    values = {
        "levels": json.dumps(POLICY["levels"]),
        "alerts": alerts,
        "policy": json.dumps(POLICY),
        "first": first,
        "spacing": spacing,
    }
    for statement in SETUP:
        conn.execute(statement, {name: value for name, value in values.items() if f"%({name})s" in statement})
    return dict(conn.execute("SELECT id, next_escalation_at FROM oncall_alert").fetchall())


def bare_loop(conn: psycopg.Connection, alerts: int) -> tuple[float, float]:
    """The bare database work of ``alerts`` escalations: CPU seconds of this process and of its
    PostgreSQL backend."""
    conn.execute(
        """CREATE TEMP TABLE bare_alert AS
           SELECT id, status, level, round, next_escalation_at FROM oncall_alert"""
    )
    conn.execute("ALTER TABLE bare_alert ADD PRIMARY KEY (id)")
    conn.execute("CREATE TEMP TABLE bare_page (id bigserial PRIMARY KEY, alert_id bigint, key text)")
    ids = [row[0] for row in conn.execute("SELECT id FROM bare_alert ORDER BY id")]
    backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    before = time.process_time(), cpu_seconds([backend])
    for alert_id in ids:
        with conn.transaction():
            conn.execute(BARE, {"id": alert_id})
    return time.process_time() - before[0], cpu_seconds([backend]) - before[1]


def cpu(
    workers: subprocess.Popen, scheduler: subprocess.Popen, rabbit: Callable[[], list[int]], postgres: Tracked
) -> dict[str, float]:
    """CPU seconds so far of Pulse's processes, of RabbitMQ's node, and of the database's backends
    (they come and go: each one's whole CPU, so those that began in the window count all of theirs)."""
    return {
        "pulse": cpu_seconds(tree(workers.pid) + tree(scheduler.pid)),
        "rabbitmq": cpu_seconds(rabbit()),
        "postgresql": postgres.seconds(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--alerts", type=int, default=10_000)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    with own_rabbitmq() as rabbit:
        run(args, rabbit)


def run(args: argparse.Namespace, rabbit: Callable[[], list[int]]) -> None:
    env = {**os.environ, **ENV, "PULSE_METRICS_PORT": str(free_port())}
    reset(NAME, OWN_BROKER)
    started = datetime.now(UTC)
    first = started + LEAD
    spacing = timedelta(minutes=args.minutes) / args.alerts
    last = first + spacing * (args.alerts - 1)
    with psycopg.connect(ENV["PULSE_DATABASE_URL"], autocommit=True) as conn:
        due = setup(conn, args.alerts, first, spacing)
    workers, scheduler = start_pulse(env, args.processes, args.threads, queues=("oncall",))
    postgres = Tracked(backends(NAME))
    try:
        time.sleep(max(0.0, (first - datetime.now(UTC)).total_seconds() - IDLE_S))
        idle = cpu(workers, scheduler, rabbit, postgres)
        time.sleep(max(0.0, (first - datetime.now(UTC)).total_seconds()))
        before = cpu(workers, scheduler, rabbit, postgres)
        idle = {name: (before[name] - idle[name]) / IDLE_S for name in before}  # CPU seconds per second
        with psycopg.connect(ENV["PULSE_DATABASE_URL"], autocommit=True) as conn:
            deadline = time.monotonic() + (last - datetime.now(UTC)).total_seconds() + 120
            while time.monotonic() < deadline:
                waiting = conn.execute("SELECT count(*) FROM oncall_alert WHERE level = 1").fetchone()[0]
                if not waiting:
                    break
                time.sleep(1)
            after = cpu(workers, scheduler, rabbit, postgres)
            window = (datetime.now(UTC) - first).total_seconds()
            steps = conn.execute(
                "SELECT alert_id, at FROM oncall_timeline WHERE kind = 'escalated' AND level = 1"
            ).fetchall()
            lateness = [(at - due[alert_id]).total_seconds() for alert_id, at in steps]
            missed = args.alerts - len({alert_id for alert_id, _ in steps})
            doubled = conn.execute(DOUBLED).fetchone()[0]
    finally:
        postgres.stop()
        stop_pulse(workers, scheduler)

    with psycopg.connect(ENV["PULSE_DATABASE_URL"], autocommit=True) as conn:
        bare_client, bare_postgres = bare_loop(conn, args.alerts)

    escalated = len(lateness)
    used = {name: after[name] - before[name] for name in before}
    busy = {name: used[name] - idle[name] * window for name in used}  # less what doing nothing costs
    pulse_ms = sum(busy.values()) / max(escalated, 1) * 1000
    bare_ms = (bare_client + bare_postgres) / args.alerts * 1000
    print(
        f"\n{args.alerts} alerts due over {args.minutes:g} minutes "
        f"({args.alerts / args.minutes / 60:.1f} escalations/s); "
        f"{args.processes} worker processes x {args.threads} threads on the oncall queue"
    )
    print(
        f"lateness (timeline - due): p50 {percentile(lateness, 0.5) * 1000:.0f} ms, "
        f"p99 {percentile(lateness, 0.99) * 1000:.0f} ms, max {max(lateness) * 1000:.0f} ms; "
        f"escalated {escalated}, missed {missed}, doubled {doubled}"
    )
    per = {name: value / escalated * 1000 for name, value in used.items()}
    marginal = {name: value / escalated * 1000 for name, value in busy.items()}
    print(
        f"CPU per escalation over the {window:.0f} s window: workers and scheduler {per['pulse']:.2f} ms, "
        f"RabbitMQ {per['rabbitmq']:.2f} ms, PostgreSQL {per['postgresql']:.2f} ms; less what the same processes "
        f"use idle ({', '.join(f'{n} {v * 100:.1f} %' for n, v in idle.items())} of a core): "
        f"{marginal['pulse']:.2f}, {marginal['rabbitmq']:.2f}, {marginal['postgresql']:.2f} ms, "
        f"{pulse_ms:.2f} ms in all"
    )
    print(
        f"bare database work of an escalation in a plain loop (same run): {bare_ms:.2f} ms "
        f"(client {bare_client / args.alerts * 1000:.2f}, PostgreSQL {bare_postgres / args.alerts * 1000:.2f}); "
        f"Pulse / bare: {pulse_ms / bare_ms:.1f} x"
    )


if __name__ == "__main__":
    main()
