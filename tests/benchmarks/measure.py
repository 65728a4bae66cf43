"""What the benchmarks share: a fresh database and vhost, free ports, and CPU and memory read from /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import requests
from psycopg import sql

ROOT = Path(__file__).resolve().parents[2]
HOST = os.environ.get("PULSE_TEST_HOST", "127.0.0.1")
TICK = os.sysconf("SC_CLK_TCK")


def environment(name: str) -> dict[str, str]:
    """Pulse's settings for a benchmark with its own database and vhost, both called ``name``."""
    return {
        "PULSE_BROKER_URL": f"amqp://guest:guest@{HOST}:5672/{name}",
        "PULSE_DATABASE_URL": f"postgresql://postgres@{HOST}:5432/{name}",
        "PULSE_METRICS_DIR": os.path.join(tempfile.gettempdir(), name + "-metrics"),
        "PULSE_LOG_LEVEL": "WARNING",
    }


def reset(name: str) -> None:
    """A new vhost and a new, migrated database, both called ``name``."""
    env = environment(name)
    api = f"http://guest:guest@{HOST}:15672/api"
    requests.delete(f"{api}/vhosts/{name}", timeout=10)
    requests.put(f"{api}/vhosts/{name}", timeout=10).raise_for_status()
    requests.put(
        f"{api}/permissions/{name}/guest", json={"configure": ".*", "write": ".*", "read": ".*"}, timeout=10
    ).raise_for_status()
    admin = psycopg.conninfo.make_conninfo(env["PULSE_DATABASE_URL"], dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    subprocess.run(
        [sys.executable, "-m", "pulse.cli", "migrate"], env={**os.environ, **env}, check=True, stdout=subprocess.DEVNULL
    )


def drop_vhost(name: str) -> None:
    """Delete the vhost ``name`` and its queues (quorum queues hold files on the node until deleted)."""
    requests.delete(f"http://guest:guest@{HOST}:15672/api/vhosts/{name}", timeout=60)


def pids(*names: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as f:
                    if f.read().strip() in names:
                        found.append(int(entry))
            except OSError:
                pass
    return found


def tree(root: int) -> list[int]:
    """A process and all its descendants."""
    result, todo = [], [root]
    while todo:
        pid = todo.pop()
        result.append(pid)
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return result


def cpu_seconds(pid_list: list[int]) -> float:
    """The CPU the processes used, and the children they reaped: so a process of the list that
    ends between two readings (a PostgreSQL backend, reaped by the postmaster of the list) moves
    its time to its parent's count instead of taking it away, and a difference is never negative."""
    total = 0
    for pid in pid_list:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
        except OSError:
            pass
    return total / TICK


def machine_busy_seconds() -> float:
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    return (sum(values) - values[3] - values[4]) / TICK  # all but idle and iowait


def peak_rss_mib(pid_list: list[int]) -> list[float]:
    peaks = []
    for pid in pid_list:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peaks.append(int(line.split()[1]) / 1024)
        except OSError:
            pass
    return peaks


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def start_pulse(
    env: dict[str, str], processes: int, threads: int, queues: tuple[str, ...] = (), log: Any = None
) -> tuple[subprocess.Popen, subprocess.Popen]:
    """`dramatiq pulse.actors` (on ``queues`` only, when given) and `periodiq pulse.actors` with
    ``env``, quiet (the workers' log lines into ``log``, a file, when given), each in a session of its own."""
    quiet: dict = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": ROOT, "env": env}
    only = ["-Q", *queues] if queues else []
    workers = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dramatiq",
            "pulse.actors",
            *only,
            "--processes",
            str(processes),
            "--threads",
            str(threads),
        ],
        start_new_session=True,
        **{**quiet, "stderr": log or subprocess.DEVNULL},
    )
    scheduler = subprocess.Popen(
        [sys.executable, "-c", "from periodiq import entrypoint; entrypoint()", "pulse.actors"],
        start_new_session=True,
        **quiet,
    )
    return workers, scheduler


def stop_pulse(workers: subprocess.Popen, scheduler: subprocess.Popen) -> None:
    """SIGTERM to whichever of them still runs; wait for the workers to finish what they hold."""
    for process in (scheduler, workers):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    workers.wait(120)


def sleep_until(moment: datetime) -> None:
    time.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()))
