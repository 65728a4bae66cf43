"""Uptime at scale: N components every I seconds against a fast local target, for T minutes.

    python tests/benchmarks/bench_uptime.py --components 2000 --interval 20 --minutes 2
    python tests/benchmarks/bench_uptime.py --components 20000 --interval 60 --minutes 3
    PULSE_QUEUE_TYPE=quorum python tests/benchmarks/bench_uptime.py   # quorum queues, one node
    python tests/benchmarks/bench_uptime.py --cluster 3                # quorum queues, 3 nodes
    python tests/benchmarks/bench_uptime.py --url http://127.0.0.1:8080/   # a target of your own

It migrates its own database (pulse_bench_uptime) and vhost, starts the target
(tests/benchmarks/fast_target.py), times plain `requests` against it (a fresh connection per
request, one process: the baseline), creates the components with their first slots spread over one
interval, runs `dramatiq pulse.actors` and `periodiq pulse.actors`, and after one interval of
warm-up measures a window of T minutes. It prints checks/s; the start lag (when the request began
minus its slot) p50/p99/max; missed slots (due in the window, never checked) and duplicated checks
(requests the target answered beyond the checks recorded); the CPU of the workers, the
scheduler, RabbitMQ and PostgreSQL per check; the workers' peak RSS; and the ratio to the baseline.

With ``--url URL`` it checks that target instead (a local nginx, say, as a user points Pulse at
real sites; conditions ``[STATUS] < 400`` and ``[RESPONSE_TIME] < 1000``): duplicated requests are
then not counted (they are counted at the benchmark's own target only), and the baseline times
plain `requests` against that URL.

With ``--logs FILE`` the workers log at INFO into FILE (a line per completed message among them)
rather than at WARNING to nowhere: run it with and without, back to back, for what the lines cost.

With ``--cluster N`` it starts a RabbitMQ cluster of N nodes of its own (tests/support/cluster.py:
ports 5781 and up, the system's node untouched), runs Pulse on it with quorum queues, and counts
the CPU of those N nodes as RabbitMQ's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.benchmarks.measure import (
    ROOT,
    cpu_seconds,
    drop_vhost,
    environment,
    free_port,
    machine_busy_seconds,
    peak_rss_mib,
    percentile,
    pids,
    reset,
    sleep_until,
    start_pulse,
    stop_pulse,
    tree,
)
from tests.support.cluster import Cluster, beam_pids

NAME = "pulse_bench_uptime"
ENV = environment(NAME)
OWN = '["[STATUS] == 200", "[BODY].status == UP", "[RESPONSE_TIME] < 1000"]'  # fast_target.py's answer
OTHER = '["[STATUS] < 400", "[RESPONSE_TIME] < 1000"]'


def start_target() -> tuple[subprocess.Popen, str]:
    """Start tests/benchmarks/fast_target.py: the process and the URL to check."""
    port = free_port()
    target = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/benchmarks/fast_target.py"), str(port)], stdout=subprocess.PIPE, text=True
    )
    assert target.stdout and target.stdout.readline().strip() == "ready"
    return target, f"http://127.0.0.1:{port}/health"


def stop_target(target: subprocess.Popen) -> int:
    """Stop the target; how many requests it answered."""
    target.send_signal(signal.SIGTERM)
    return json.loads(target.communicate(timeout=30)[0].splitlines()[-1])["requests"]


def baseline(url: str, seconds: float = 10) -> tuple[int, float]:
    """Plain `requests`, a fresh connection per request, one process: (requests made, requests/s)."""
    done, deadline = 0, time.monotonic() + seconds
    started = time.monotonic()
    while time.monotonic() < deadline:
        requests.get(url, timeout=5).raise_for_status()
        done += 1
    return done, done / (time.monotonic() - started)


def create_components(
    conn: psycopg.Connection, count: int, interval: int, url: str, first: datetime, conditions: str = OWN
) -> None:
    org = conn.execute("INSERT INTO organization (slug, name) VALUES ('bench', 'Bench') RETURNING id").fetchone()[0]
    with conn.cursor().copy(
        "COPY component (organization_id, key, name, url, interval_seconds, timeout_ms, conditions, next_check_at)"
        " FROM STDIN"
    ) as copy:
        for i in range(count):
            slot = first + timedelta(seconds=interval * i / count)
            copy.write_row((org, f"c{i}", f"Component {i}", url, interval, 5000, conditions, slot))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--components", type=int, default=2000)
    parser.add_argument("--interval", type=int, default=20, help="seconds")
    parser.add_argument("--minutes", type=float, default=2)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--cluster", type=int, default=0, metavar="N", help="on a RabbitMQ cluster of N nodes")
    parser.add_argument("--url", help="check this target (a local nginx, say) instead of the benchmark's own")
    parser.add_argument("--logs", metavar="FILE", help="the workers log at INFO into FILE")
    args = parser.parse_args()
    env = {**os.environ, **ENV, "PULSE_METRICS_PORT": str(free_port())}
    if args.logs:
        env["PULSE_LOG_LEVEL"] = "INFO"
    with Cluster(size=args.cluster) if args.cluster else contextlib.nullcontext() as cluster:
        if cluster:
            env.update(PULSE_BROKER_URL=",".join(cluster.urls()), PULSE_QUEUE_TYPE="quorum")
        try:
            run(args, env, [pid for node in cluster.nodes for pid in beam_pids(node)] if cluster else pids("beam.smp"))
        finally:
            drop_vhost(NAME)  # quorum queues hold files on the node until deleted


def run(args: argparse.Namespace, env: dict[str, str], rabbit: list[int]) -> None:
    """Measure Pulse with ``env``, counting the CPU of the ``rabbit`` processes as RabbitMQ's."""
    reset(NAME)
    target, url = (None, args.url) if args.url else start_target()
    baseline_requests, plain = baseline(url)

    boot = timedelta(seconds=20)
    first = datetime.now(UTC) + boot
    with psycopg.connect(ENV["PULSE_DATABASE_URL"], autocommit=True) as conn:
        create_components(conn, args.components, args.interval, url, first, OWN if target else OTHER)
    log = open(args.logs, "w") if args.logs else None  # closed once the workers stop
    workers, scheduler = start_pulse(env, args.processes, args.threads, log=log)
    try:
        start = first + timedelta(seconds=args.interval + 15)  # warm-up: one interval, and a tick or so
        end = start + timedelta(minutes=args.minutes)
        sleep_until(start)
        watched = (tree(workers.pid), tree(scheduler.pid), rabbit, pids("postgres"))
        before = (*map(cpu_seconds, watched), machine_busy_seconds())
        sleep_until(end)
        after = (*map(cpu_seconds, watched), machine_busy_seconds())
        rss = peak_rss_mib(tree(workers.pid)[1:])
        sleep_until(end + timedelta(seconds=15))  # let the window's last checks finish
        scheduler.send_signal(signal.SIGTERM)
        scheduler.wait(30)
    finally:
        stop_pulse(workers, scheduler)
        if log:
            log.close()
        answered = stop_target(target) if target else None

    with psycopg.connect(ENV["PULSE_DATABASE_URL"]) as conn:
        lags = [
            row[0]
            for row in conn.execute(
                "SELECT extract(epoch FROM started_at - scheduled_at) FROM uptime_check"
                " WHERE scheduled_at >= %s AND scheduled_at < %s",
                (start, end),
            )
        ]
        recorded_total = conn.execute("SELECT count(*) FROM uptime_check").fetchone()[0]
        failed = conn.execute(
            "SELECT count(*) FROM uptime_check WHERE scheduled_at >= %s AND scheduled_at < %s AND NOT success",
            (start, end),
        ).fetchone()[0]
    expected = 0
    for i in range(args.components):
        offset = args.interval * i / args.components
        first_in_window = max(0, -(-((start - first).total_seconds() - offset) // args.interval))
        slot = offset + first_in_window * args.interval
        while first + timedelta(seconds=slot) < end:
            expected += 1
            slot += args.interval
    window = (end - start).total_seconds()
    checks = len(lags)
    per_check = [(a - b) / max(1, len(lags)) * 1000 for a, b in zip(after, before, strict=True)]
    broker = f"{args.cluster}-node cluster" if args.cluster else "one node"
    print(
        f"\n{args.components} components every {args.interval} s for {args.minutes:g} min, "
        f"{args.processes} worker processes x {args.threads} threads, RabbitMQ {broker}, "
        f"{env.get('PULSE_QUEUE_TYPE', 'classic')} queues, workers log at {env['PULSE_LOG_LEVEL']}"
    )
    print(f"checks/s          : {checks / window:8.1f}  (expected {expected / window:.1f}; {failed} failed)")
    print(
        f"start lag         : p50 {percentile(lags, 0.5) * 1000:.0f} ms, p99 {percentile(lags, 0.99) * 1000:.0f} ms,"
        f" max {max(lags, default=float('nan')) * 1000:.0f} ms"
    )
    # Every check makes one request and records one row: requests beyond the rows are duplicates.
    duplicated = "not counted (not our target)" if answered is None else answered - baseline_requests - recorded_total
    print(f"missed, duplicated: {expected - checks}, {duplicated}")
    workers_ms, scheduler_ms, rabbit_ms, postgres_ms, machine_ms = per_check
    print(
        f"CPU per check     : {workers_ms + scheduler_ms + rabbit_ms + postgres_ms:.2f} ms (workers {workers_ms:.2f},"
        f" scheduler {scheduler_ms:.2f}, RabbitMQ {rabbit_ms:.2f}, PostgreSQL {postgres_ms:.2f});"
        f" whole machine {machine_ms:.2f} ms"
    )
    print(f"worker peak RSS   : {max(rss, default=0):.0f} MiB per process ({sum(rss):.0f} MiB together)")
    print(
        f"baseline          : plain requests {plain:.0f} req/s in one process; "
        f"Pulse {checks / window:.0f} checks/s = {checks / window / plain:.2f} x"
    )


if __name__ == "__main__":
    main()
