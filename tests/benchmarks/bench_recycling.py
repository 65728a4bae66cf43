"""What recycling the worker processes costs: R restarts of an idle ``dramatiq pulse.actors``.

    python tests/benchmarks/bench_recycling.py --processes 2 --threads 8 --restarts 5

Each restart is what `pulse.middleware.recycling` asks for: SIGHUP to the main process, which stops
every worker process gracefully and re-executes itself. It prints, per restart, the seconds from
the SIGHUP until every new worker process is ready (no message is taken meanwhile) and the CPU the
run spent beyond its idle rate (stopping, re-executing, importing, connecting); then the processes
the main process started and never reaped (dramatiq's fork processes, one set per restart), and what
a restart every N messages would cost at a given rate of messages per worker process.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pulse.processes import DRAMATIQ
from tests.benchmarks.measure import ROOT, environment, reset, tree
from tests.support.worker import free_port

NAME = "pulse_bench_recycling"
READY = "Worker process is ready for action"
TICK = os.sysconf("SC_CLK_TCK")


def run_cpu(main: int) -> float:
    """CPU seconds of the whole run: the main process, the children it reaped, and those alive."""
    total = 0
    for pid in tree(main):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if pid == main else 0)
    return total / TICK


def zombies(main: int) -> int:
    count = 0
    for pid in tree(main)[1:]:
        try:
            with open(f"/proc/{pid}/stat") as f:
                count += f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            pass
    return count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--restarts", type=int, default=5)
    parser.add_argument("--rate", type=float, default=12.5, help="messages a second per worker process")
    args = parser.parse_args()

    reset(NAME)
    env = {**os.environ, **environment(NAME), "PULSE_LOG_LEVEL": "INFO", "PULSE_METRICS_PORT": str(free_port())}
    command = [*DRAMATIQ, "pulse.actors", "--processes", str(args.processes), "--threads", str(args.threads)]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    ready = threading.Semaphore(0)

    def read() -> None:
        assert process.stdout
        for line in process.stdout:
            if READY in line:
                ready.release()

    threading.Thread(target=read, daemon=True).start()

    def wait_ready() -> None:
        for _ in range(args.processes):
            if not ready.acquire(timeout=120):
                raise SystemExit("the worker processes did not start")

    try:
        wait_ready()
        time.sleep(5)  # settled: the loops have their turns
        before, started = run_cpu(process.pid), time.monotonic()
        time.sleep(10)
        idle = (run_cpu(process.pid) - before) / (time.monotonic() - started)
        print(f"idle: {idle * 1000:.1f} ms of CPU a second")
        walls, cpus = [], []
        for number in range(1, args.restarts + 1):
            before, started = run_cpu(process.pid), time.monotonic()
            os.kill(process.pid, signal.SIGHUP)
            wait_ready()
            wall = time.monotonic() - started
            time.sleep(5)
            cpu = run_cpu(process.pid) - before - idle * (time.monotonic() - started)
            walls.append(wall)
            cpus.append(cpu)
            print(f"restart {number}: {wall:.2f} s without worker processes, {cpu:.2f} s of CPU beyond idle")
        print(f"processes never reaped after {args.restarts} restarts: {zombies(process.pid)}")
        wall, cpu = sum(walls) / len(walls), sum(cpus) / len(cpus)
        for every in (1_000, 10_000, 100_000):
            interval = every / args.rate
            print(
                f"a restart every {every:,} messages at {args.rate:g} messages/s a process: every {interval:,.0f} s, "
                f"{wall / interval:.1%} of the time without workers, {cpu / interval / args.processes * 1000:.1f} ms "
                f"of CPU a second a process"
            )
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)


if __name__ == "__main__":
    main()
