"""What the benchmarks share: a fresh database and vhost, a RabbitMQ node of their own, and CPU
and memory read from /proc.

Whose CPU a benchmark counts: its own processes (Pulse's, its target's), the PostgreSQL backends
connected to its database (`backends`: not the server's background processes, nor another
database's backends) and, for the benchmarks that count RabbitMQ's, a node of the benchmark's own
(`own_rabbitmq`): the machine's node serves every vhost in one process, whose CPU cannot be told
apart by vhost. So a test run beside on the same machine (its database, its vhost on the machine's
node) does not land in the figures; it still takes its share of the cores.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import requests
from psycopg import sql

from tests.support.cluster import Cluster, beam_pids

ROOT = Path(__file__).resolve().parents[2]
HOST = os.environ.get("PULSE_TEST_HOST", "127.0.0.1")
TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Broker:
    """A RabbitMQ node: its AMQP address (host:port) and its management API (guest's credentials)."""

    amqp: str
    api: str


MACHINE_BROKER = Broker(f"{HOST}:5672", f"http://guest:guest@{HOST}:15672")  # the machine's node
OWN_BROKER = Broker("127.0.0.1:5771", "http://guest:guest@127.0.0.1:15771")  # `own_rabbitmq`'s


@contextlib.contextmanager
def own_rabbitmq() -> Iterator[Callable[[], list[int]]]:
    """A RabbitMQ node of the benchmark's own at `OWN_BROKER`, configured as the machine's (the management
    plugin, an Erlang scheduler per core; its data in a temporary directory), for as long as the
    block runs; yields a function listing its Erlang VM's pids (whose CPU is RabbitMQ's)."""
    node = Cluster(size=1, name="pulse-bench", base_port=5771, management_port=15771, schedulers=None)
    with node:
        yield lambda: beam_pids(node.nodes[0])


def environment(name: str, broker: Broker = MACHINE_BROKER) -> dict[str, str]:
    """Pulse's settings for a benchmark with its own database and vhost (on ``broker``), both called ``name``."""
    return {
        "PULSE_BROKER_URL": f"amqp://guest:guest@{broker.amqp}/{name}",
        "PULSE_RABBITMQ_API_URL": broker.api,
        "PULSE_DATABASE_URL": f"postgresql://postgres@{HOST}:5432/{name}",
        "PULSE_METRICS_DIR": os.path.join(tempfile.gettempdir(), name + "-metrics"),
        "PULSE_LOG_LEVEL": "WARNING",
    }


def reset(name: str, broker: Broker = MACHINE_BROKER) -> None:
    """A new vhost (on ``broker``) and a new, migrated database, both called ``name``."""
    env = environment(name, broker)
    api = f"{broker.api}/api"
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


def drop_vhost(name: str, broker: Broker = MACHINE_BROKER) -> None:
    """Delete the vhost ``name`` and its queues (quorum queues hold files on the node until deleted)."""
    requests.delete(f"{broker.api}/api/vhosts/{name}", timeout=60)


def backends(database: str) -> Callable[[], list[int]]:
    """A function listing the PostgreSQL backends connected to ``database`` now (pg_stat_activity),
    asked on a connection of its own to the ``postgres`` database, which is not among them."""
    admin = psycopg.conninfo.make_conninfo(f"postgresql://postgres@{HOST}:5432/", dbname="postgres")
    conn, lock = psycopg.connect(admin, autocommit=True), threading.Lock()

    def find() -> list[int]:
        with lock:
            return [pid for (pid,) in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (database,))]

    return find


class Tracked:
    """The CPU (user and system) of a set of processes that changes: ``find`` lists them, and is
    asked every ``every`` seconds in a thread of its own and at each `seconds`, so a process that
    starts counts from its first reading and one that ends keeps its last (PostgreSQL backends come
    and go). Read `seconds` before and after a window; `stop` when done."""

    def __init__(self, find: Callable[[], list[int]], every: float = 0.5) -> None:
        self.find, self.every = find, every
        self.last: dict[tuple[int, int], float] = {}  # (pid, its start time): CPU seconds at the last reading
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.read()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.wait(self.every):
            self.read()

    def read(self) -> None:
        readings = {}
        for pid in self.find():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:  # gone meanwhile: its last reading stands
                continue
            readings[(pid, int(fields[19]))] = (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
        with self.lock:
            self.last.update(readings)

    def seconds(self) -> float:
        """The CPU of every process seen so far, up to now."""
        self.read()
        with self.lock:
            return sum(self.last.values())

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


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
