"""An urgent notification behind a backlog of routine ones, with classic and with quorum queues.

    python tests/benchmarks/bench_urgent.py --routine 10000

For each queue type, in a database and vhost of its own (pulse_bench_urgent_<type>): a routine
event (component.status_changed) for N webhook subscribers is broadcast with the workers stopped,
so its N deliveries wait in RabbitMQ; the workers start (`dramatiq pulse.actors -Q notifications`)
and, once the first routine deliveries arrive, an urgent event (incident.opened) of another
organization is broadcast to one webhook. It prints the time from that broadcast to the urgent
delivery's arrival and how many routine deliveries were made meanwhile, beside the baseline a
queue without priorities would give: the time the rest of the backlog took to drain (first in,
first out, the urgent one would have come last).

Classic queues put urgent messages ahead with RabbitMQ's priorities; quorum queues (no priorities
in RabbitMQ 3.x) through the queue's urgent twin, ``notifications.urgent``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.benchmarks.measure import ROOT, drop_vhost, environment, reset
from tests.support.worker import free_port

#: Run the broadcast of an event (argv[1]) in the process; publish it as Pulse does, printing when
#: (epoch seconds: every time here is the machine's clock, which PostgreSQL's timestamps share).
BROADCAST = [sys.executable, "-c", "import sys, pulse.actors; from actors.notifications import broadcast; "
             "broadcast.fn(int(sys.argv[1]))"]  # fmt: skip
SEND = [sys.executable, "-c", "import sys, time, pulse.actors; from pulse import events; "
        "started = time.time(); events.publish([int(sys.argv[1])]); print(started)"]  # fmt: skip
PAYLOAD = json.dumps({"component": {"name": "Public API"}, "incident": {"title": "Public API is down"}})


class Arrivals(ThreadingHTTPServer):
    """Records when the urgent delivery arrives (epoch seconds)."""

    arrived: float | None = None
    daemon_threads = True


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.server.arrived is None:  # type: ignore[attr-defined]
            self.server.arrived = time.time()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def create(conn: psycopg.Connection, routine: int, backlog_url: str, urgent_url: str) -> tuple[int, int]:
    """Two organizations: one with ``routine`` webhook subscribers and a routine event, one with a
    single subscriber and an urgent event. Returns the two events' ids."""
    ids = []
    for slug, count, url, kind in (
        ("busy", routine, backlog_url, "component.status_changed"),
        ("urgent", 1, urgent_url, "incident.opened"),
    ):
        org = conn.execute(
            "INSERT INTO organization (slug, name) VALUES (%s, %s) RETURNING id", (slug, slug)
        ).fetchone()
        with conn.cursor().copy("COPY subscriber (organization_id, kind, address) FROM STDIN") as copy:
            for i in range(count):
                copy.write_row((org[0], "webhook", f"{url}/{i}"))
        ids.append(
            conn.execute(
                "INSERT INTO event (organization_id, type, payload) VALUES (%s, %s, %s) RETURNING id",
                (org[0], kind, PAYLOAD),
            ).fetchone()[0]
        )
    return ids[0], ids[1]


def ready(env: dict[str, str], queue: str) -> int:
    counted = subprocess.run(
        [sys.executable, "-m", "pulse.cli", "queues", "--json"], env=env, cwd=ROOT, capture_output=True, text=True
    )
    rows = {row["queue"]: row for row in json.loads(counted.stdout)["queues"]}
    return rows[queue]["ready"] or 0


def run(queue_type: str, routine: int, processes: int, threads: int, backlog_url: str) -> dict[str, float]:
    name = f"pulse_bench_urgent_{queue_type}"
    env = {**os.environ, **environment(name), "PULSE_QUEUE_TYPE": queue_type, "PULSE_METRICS_PORT": str(free_port())}
    reset(name)
    arrivals = Arrivals(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=arrivals.serve_forever, daemon=True).start()
    with psycopg.connect(env["PULSE_DATABASE_URL"], autocommit=True) as conn:
        busy, pressing = create(conn, routine, backlog_url, f"http://127.0.0.1:{arrivals.server_port}/urgent")
    # The routine broadcast runs with no worker: its deliveries wait in RabbitMQ.
    subprocess.run([*BROADCAST, str(busy)], env=env, cwd=ROOT, check=True, capture_output=True)
    queued = ready(env, "notifications")
    workers = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dramatiq",
            "pulse.actors",
            "-Q",
            "notifications",
            "--processes",
            str(processes),
            "--threads",
            str(threads),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        with psycopg.connect(env["PULSE_DATABASE_URL"], autocommit=True) as conn:
            sent = "SELECT count(*) FROM notification WHERE status = 'sent' AND event_id = %s"
            while conn.execute(sent, (busy,)).fetchone()[0] < 100:
                time.sleep(0.01)  # the workers are delivering the backlog
            sender = subprocess.run([*SEND, str(pressing)], env=env, cwd=ROOT, check=True, capture_output=True)
            started = float(sender.stdout)
            while arrivals.arrived is None and time.time() - started < 120:
                time.sleep(0.001)
            while conn.execute(sent, (busy,)).fetchone()[0] < routine and time.time() - started < 600:
                time.sleep(0.05)
            arrived = arrivals.arrived or float("nan")
            meanwhile, last = conn.execute(
                "SELECT count(*) FILTER (WHERE sent_at BETWEEN to_timestamp(%s) AND to_timestamp(%s)),"
                " extract(epoch FROM max(sent_at))::float8 FROM notification WHERE event_id = %s",
                (started, arrived, busy),
            ).fetchone()
    finally:
        os.killpg(workers.pid, signal.SIGTERM)
        workers.wait(120)
        arrivals.shutdown()
        drop_vhost(name)
    return {"queued": queued, "latency": arrived - started, "before": meanwhile, "drained": last - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--routine", type=int, default=10_000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--types", default="classic,quorum")
    args = parser.parse_args()
    port = free_port()
    receiver = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/benchmarks/fast_target.py"), str(port)], stdout=subprocess.PIPE, text=True
    )
    assert receiver.stdout and receiver.stdout.readline().strip() == "ready"
    try:
        url = f"http://127.0.0.1:{port}/hook"
        results = {t: run(t, args.routine, args.processes, args.threads, url) for t in args.types.split(",")}
    finally:
        receiver.send_signal(signal.SIGTERM)
        receiver.wait(30)
    print(f"\nan urgent notification behind {args.routine} routine ones, {args.processes} x {args.threads} threads")
    for queue_type, r in results.items():
        print(
            f"{queue_type:8}: {r['queued']:.0f} routine queued; the urgent one delivered {r['latency'] * 1000:.0f} ms"
            f" after its broadcast, {r['before']:.0f} routine ones meanwhile; the rest of the backlog took"
            f" {r['drained']:.1f} s (first in, first out: the urgent one would have waited that long, "
            f"{r['drained'] / r['latency']:.0f} x)"
        )


if __name__ == "__main__":
    main()
