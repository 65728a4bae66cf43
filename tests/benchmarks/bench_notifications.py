"""One event broadcast to N webhook subscribers served by a local receiver.

    python tests/benchmarks/bench_notifications.py --subscribers 10000

It migrates its own database (pulse_bench_notifications) and vhost, starts the receiver
(tests/benchmarks/fast_target.py, which keeps a connection alive when a request asks), times a
plain `requests` POST loop against it (a fresh connection per request, one process: the
baseline), creates the subscribers and one event, starts `dramatiq pulse.actors -Q notifications`,
sends `broadcast` and waits for every notification to be sent. It prints deliveries/s, the time
from the broadcast to the last delivery, duplicates and losses as the receiver counted them, the
CPU of workers, RabbitMQ (a node of the benchmark's own) and PostgreSQL (the backends of its
database) per delivery, and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.benchmarks.measure import (
    OWN_BROKER,
    ROOT,
    Tracked,
    backends,
    cpu_seconds,
    environment,
    machine_busy_seconds,
    own_rabbitmq,
    peak_rss_mib,
    reset,
    tree,
)
from tests.support.worker import free_port

NAME = "pulse_bench_notifications"
ENV = environment(NAME, OWN_BROKER)
BODY = json.dumps({"id": "pulse-1", "type": "incident.opened", "title": "Public API is down", "summary": "x" * 300})


def baseline(url: str, seconds: float = 10) -> float:
    """Plain `requests` POSTs, a fresh connection each, one process: requests/s."""
    done, started = 0, time.monotonic()
    while time.monotonic() - started < seconds:
        requests.post(url, data=BODY, headers={"Content-Type": "application/json"}, timeout=5).raise_for_status()
        done += 1
    return done / (time.monotonic() - started)


def create(conn: psycopg.Connection, subscribers: int, url: str) -> int:
    """The organization, its webhook subscribers and one event; the event's id."""
    org = conn.execute("INSERT INTO organization (slug, name) VALUES ('bench', 'Bench') RETURNING id").fetchone()[0]
    with conn.cursor().copy("COPY subscriber (organization_id, kind, address) FROM STDIN") as copy:
        for i in range(subscribers):
            copy.write_row((org, "webhook", f"{url}/{i}"))
    payload = json.dumps({"component": {"name": "Public API"}, "incident": {"title": "Public API is down"}})
    return conn.execute(
        "INSERT INTO event (organization_id, type, payload) VALUES (%s, 'incident.opened', %s) RETURNING id",
        (org, payload),
    ).fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subscribers", type=int, default=10_000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for the last delivery")
    args = parser.parse_args()
    with own_rabbitmq() as rabbit:
        run(args, rabbit)


def run(args: argparse.Namespace, rabbit: Callable[[], list[int]]) -> None:
    env = {**os.environ, **ENV, "PULSE_METRICS_PORT": str(free_port())}
    reset(NAME, OWN_BROKER)
    port = free_port()
    receiver = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/benchmarks/fast_target.py"), str(port)], stdout=subprocess.PIPE, text=True
    )
    assert receiver.stdout and receiver.stdout.readline().strip() == "ready"
    url = f"http://127.0.0.1:{port}/hook"
    plain = baseline(url)

    with psycopg.connect(ENV["PULSE_DATABASE_URL"], autocommit=True) as conn:
        event_id = create(conn, args.subscribers, url)
    threads = ["--processes", str(args.processes), "--threads", str(args.threads)]
    workers = subprocess.Popen(
        [sys.executable, "-m", "dramatiq", "pulse.actors", "-Q", "notifications", *threads],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        queue = f"{OWN_BROKER.api}/api/queues/{NAME}/notifications"
        while requests.get(queue, timeout=5).json().get("consumers", 0) < args.processes:
            time.sleep(0.2)  # the workers are booting
        os.environ.update(ENV)
        from pulse.app.workers import setup_broker

        setup_broker()
        from actors.notifications import broadcast

        watched, rabbit_pids = tree(workers.pid), rabbit()
        # The workers connect to PostgreSQL on their first message: backends started later count from 0.
        postgres = Tracked(backends(NAME))
        before = (cpu_seconds(watched), cpu_seconds(rabbit_pids), postgres.seconds(), machine_busy_seconds())
        started = time.monotonic()
        broadcast.send(event_id)
        with psycopg.connect(ENV["PULSE_DATABASE_URL"], autocommit=True) as conn:
            query = (
                "SELECT count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status = 'failed')"
                " FROM notification"
            )
            while time.monotonic() - started < args.timeout:
                sent, failed = conn.execute(query).fetchone()
                if sent + failed >= args.subscribers:
                    break
                time.sleep(0.05)
        after = (cpu_seconds(watched), cpu_seconds(rabbit_pids), postgres.seconds(), machine_busy_seconds())
        postgres.stop()
        rss = peak_rss_mib(tree(workers.pid)[1:])
    finally:
        os.killpg(workers.pid, signal.SIGTERM)
        workers.wait(120)
        receiver.send_signal(signal.SIGTERM)
        counted = json.loads(receiver.communicate(timeout=30)[0].splitlines()[-1])

    baseline_requests = counted["requests"] - counted["distinct"]  # the baseline sent no delivery id
    last = counted["last"] - started if counted["last"] else float("nan")
    deliveries = counted["distinct"]
    duplicates = counted["requests"] - baseline_requests - deliveries
    rate = deliveries / last if last > 0 else 0.0
    per = [(a - b) / max(1, deliveries) * 1000 for a, b in zip(after, before, strict=True)]
    print(f"\none event to {args.subscribers} webhook subscribers, {args.processes} processes x {args.threads} threads")
    print(f"time to last      : {last:.1f} s (sent {sent}, failed {failed})")
    print(f"deliveries/s      : {rate:.0f}")
    print(f"duplicates, losses: {duplicates}, {args.subscribers - deliveries}")
    print(
        f"CPU per delivery  : {per[0] + per[1] + per[2]:.2f} ms (workers {per[0]:.2f}, RabbitMQ {per[1]:.2f},"
        f" PostgreSQL {per[2]:.2f}); whole machine {per[3]:.2f} ms"
    )
    print(f"worker peak RSS   : {max(rss, default=0):.0f} MiB per process")
    print(
        f"baseline          : plain requests {plain:.0f} POST/s in one process;"
        f" Pulse {rate:.0f}/s = {rate / plain:.2f} x"
    )


if __name__ == "__main__":
    main()
