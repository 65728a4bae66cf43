"""Uptime Kuma 1.23.x at scale, to set beside bench_uptime.py: N http monitors every I seconds
against a URL (a local nginx), for T minutes.

    python tests/benchmarks/bench_kuma.py --kuma ~/uptime-kuma --url http://127.0.0.1:8089/health
    python tests/benchmarks/bench_kuma.py --kuma ~/uptime-kuma --url URL --monitors 2000 --interval 20 --minutes 2

``--kuma DIR`` is an Uptime Kuma 1.23.x checkout with its node_modules and its frontend (dist/,
which the server insists on) installed; nothing of it is changed. The benchmark times plain
`requests` against the URL (a fresh connection per request, one process: bench_uptime.py's
baseline), makes a data directory of its own, starts `node server/server.js` on it once for Kuma
to create and patch its SQLite database, stops it, writes a user and N active http monitors
(accepted statuses 200-299, timeout 0.8 x the interval, no retries) into the `monitor` table, and
starts it again. Kuma starts its active monitors one by one, 300 to 1,000 ms apart (its
`startMonitors`), so N monitors take about N x 0.65 s to run: the benchmark waits until every
monitor has a heartbeat, then one interval more, then measures a window of T minutes. It prints
checks/s (`heartbeat` rows timed in the window); the gap between a monitor's beats minus the
interval (Kuma times a monitor's next beat from the end of its last, so its beats slide later by
the check's duration and the event loop's delay); the CPU per check of Kuma's node process (it
holds the SQLite database) and of the whole machine (/proc/stat: the target, RabbitMQ and
PostgreSQL idling beside it are in there); its peak RSS; and the ratio to the baseline. It
stops Kuma and deletes its data directory at the end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.benchmarks.bench_uptime import baseline
from tests.benchmarks.measure import (
    cpu_seconds,
    machine_busy_seconds,
    peak_rss_mib,
    percentile,
    sleep_until,
    tree,
)
from tests.support.worker import free_port

#: How Kuma writes a heartbeat's time (redbean-node's isoDateTimeMillis, UTC).
KUMA_TIME = "%Y-%m-%d %H:%M:%S.%f"


def start_kuma(kuma: Path, data: Path, port: int) -> subprocess.Popen:
    """`node server/server.js` in ``kuma`` on ``data`` and ``port``, its output into data/kuma.log,
    in a session of its own; returns once it answers HTTP."""
    with open(data / "kuma.log", "a") as log:
        process = subprocess.Popen(
            ["node", "server/server.js", f"--data-dir={data}/", f"--port={port}", "--host=127.0.0.1"],
            cwd=kuma,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"Uptime Kuma stopped at start (exit {process.returncode}):\n{tail(data / 'kuma.log')}")
        try:
            requests.get(f"http://127.0.0.1:{port}/", timeout=5)
            return process
        except requests.ConnectionError:
            time.sleep(0.5)
    stop_kuma(process)
    sys.exit(f"Uptime Kuma did not listen within 120 s:\n{tail(data / 'kuma.log')}")


def tail(log: Path) -> str:
    """The last lines of Kuma's output (its data directory is deleted on the way out)."""
    return "\n".join(log.read_text(errors="replace").splitlines()[-20:])


def stop_kuma(process: subprocess.Popen) -> None:
    """SIGTERM (Kuma stops its monitors and closes the database), SIGKILL after 60 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def create_monitors(database: Path, count: int, interval: int, url: str) -> None:
    """A user and ``count`` active http monitors of it checking ``url`` every ``interval`` seconds."""
    with sqlite3.connect(database) as conn:
        user = conn.execute("INSERT INTO user (username, password, active) VALUES ('bench', '-', 1)").lastrowid
        conn.executemany(
            "INSERT INTO monitor (name, active, user_id, interval, retry_interval, url, type, method, timeout,"
            " maxretries, accepted_statuscodes_json) VALUES (?, 1, ?, ?, ?, ?, 'http', 'GET', ?, 0, '[\"200-299\"]')",
            [(f"Monitor {i}", user, interval, interval, url, interval * 0.8) for i in range(count)],
        )


def kuma_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(KUMA_TIME)[:-3]


def started(database: Path) -> int:
    """How many monitors have a heartbeat."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT count(DISTINCT monitor_id) FROM heartbeat").fetchone()[0]


def wait_started(database: Path, count: int, process: subprocess.Popen) -> datetime:
    """Wait until all ``count`` monitors have beaten (Kuma starts them 300 to 1,000 ms apart); when."""
    deadline, shown = time.monotonic() + count * 1.2 + 120, time.monotonic()
    while (running := started(database)) < count:
        if process.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"only {running} of {count} monitors started:\n{tail(database.parent / 'kuma.log')}")
        if time.monotonic() - shown > 60:
            print(f"  {running} of {count} monitors started", flush=True)
            shown = time.monotonic()
        time.sleep(5)
    return datetime.now(UTC)


def beats(database: Path, start: datetime, end: datetime, interval: int) -> tuple[int, int, list[float]]:
    """In [start, end): the heartbeats, those not UP, and each one's gap to its monitor's previous
    beat minus ``interval``, in seconds."""
    since = kuma_time(start - timedelta(seconds=3 * interval))
    with sqlite3.connect(database) as conn:
        rows = conn.execute(
            "SELECT monitor_id, time, status FROM heartbeat WHERE time >= ? ORDER BY monitor_id, time", (since,)
        ).fetchall()
    low, high = kuma_time(start), kuma_time(end)
    done = failed = 0
    gaps: list[float] = []
    last: dict[int, datetime] = {}
    for monitor, at, status in rows:
        moment = datetime.strptime(at, KUMA_TIME)
        if low <= at < high:
            done += 1
            failed += status != 1
            if monitor in last:
                gaps.append((moment - last[monitor]).total_seconds() - interval)
        last[monitor] = moment
    return done, failed, gaps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kuma", type=Path, required=True, help="an Uptime Kuma 1.23.x checkout, installed")
    parser.add_argument("--url", required=True, help="the target every monitor checks (a local nginx, say)")
    parser.add_argument("--monitors", type=int, default=2000)
    parser.add_argument("--interval", type=int, default=20, help="seconds")
    parser.add_argument("--minutes", type=float, default=2)
    args = parser.parse_args()
    kuma = args.kuma.resolve()
    version = json.loads((kuma / "package.json").read_text())["version"]
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    baseline_requests, plain = baseline(args.url)

    data = Path(tempfile.mkdtemp(prefix="bench-kuma-"))
    database, port = data / "kuma.db", free_port()
    try:
        stop_kuma(start_kuma(kuma, data, port))  # Kuma copies its template database and patches it
        create_monitors(database, args.monitors, args.interval, args.url)
        process = start_kuma(kuma, data, port)
        try:
            booted = datetime.now(UTC)
            ready = wait_started(database, args.monitors, process)
            start = ready + timedelta(seconds=args.interval)  # warm-up: one interval with every monitor running
            end = start + timedelta(minutes=args.minutes)
            sleep_until(start)
            watched = tree(process.pid)
            before = (cpu_seconds(watched), machine_busy_seconds())
            sleep_until(end)
            after = (cpu_seconds(watched), machine_busy_seconds())
            rss = peak_rss_mib(watched)
        finally:
            stop_kuma(process)
        checks, failed, gaps = beats(database, start, end, args.interval)
    finally:
        shutil.rmtree(data, ignore_errors=True)

    window = (end - start).total_seconds()
    own, machine = ((a - b) / max(1, checks) * 1000 for a, b in zip(after, before, strict=True))
    rate = checks / window
    print(
        f"\nUptime Kuma {version} on node {node}: {args.monitors} http monitors every {args.interval} s"
        f" for {args.minutes:g} min against {args.url}"
    )
    print(f"all started after : {(ready - booted).total_seconds():.0f} s (Kuma starts them 300 to 1,000 ms apart)")
    print(
        f"http checks/s     : {rate:8.1f}  ({args.monitors / args.interval:.1f} if each beat every"
        f" {args.interval} s; {failed} not UP)"
    )
    p50, p99, most = percentile(gaps, 0.5), percentile(gaps, 0.99), max(gaps, default=float("nan"))
    print(f"beat gap - interval: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {most * 1000:.0f} ms")
    print(f"CPU per check     : {own:.2f} ms (Kuma's node process); whole machine {machine:.2f} ms")
    print(f"Kuma peak RSS     : {max(rss, default=0):.0f} MiB")
    print(
        f"baseline          : plain requests {plain:.0f} req/s in one process ({baseline_requests} in 10 s);"
        f" Kuma {rate:.0f} checks/s = {rate / plain:.2f} x"
    )


if __name__ == "__main__":
    main()
