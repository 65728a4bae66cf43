"""Throughput of a no-op actor: bare dramatiq against Pulse's full middleware, same broker, same run.

    python tests/benchmarks/bench_middleware.py [--messages 20000] [--rounds 3] [--processes 2] [--threads 8]

Each round fills a queue with N messages, starts `dramatiq` on it, and times from the first
message taken to the queue being empty (read every 10 ms with a passive declare; at most
processes x threads x 2 prefetched messages are still in flight at that moment). Rounds alternate
bare and Pulse, and the medians are compared. Uses its own vhost and database (pulse_bench).

Both workers consume only their benchmark queue (`--queues`), so the ratio measures the
middleware. (A dramatiq worker also pays for every idle queue it consumes: with Pulse's six queues
and their delay queues, bare dramatiq itself loses 5-10 % on 2 cores.)
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pika
import requests

ROOT = Path(__file__).resolve().parents[2]
HOST = os.environ.get("PULSE_TEST_HOST", "127.0.0.1")
os.environ.update(
    {
        "PULSE_BROKER_URL": f"amqp://guest:guest@{HOST}:5672/pulse_bench",
        "PULSE_DATABASE_URL": f"postgresql://postgres@{HOST}:5432/pulse_bench",
        "PULSE_METRICS_DIR": os.path.join(tempfile.gettempdir(), "pulse_bench-metrics"),
        "PULSE_LOG_LEVEL": "WARNING",
    }
)
sys.path.insert(0, str(ROOT))

from tests.support.worker import free_port  # noqa: E402 (once the project is on the path)

VARIANTS = {
    "bare": ("tests.benchmarks.bare_noop", "bench-bare"),
    "pulse": ("tests.benchmarks.pulse_noop", "bench-pulse"),
}


def prepare() -> None:
    api = f"http://guest:guest@{HOST}:15672/api"
    requests.put(f"{api}/vhosts/pulse_bench", timeout=10).raise_for_status()
    requests.put(
        f"{api}/permissions/pulse_bench/guest", json={"configure": ".*", "write": ".*", "read": ".*"}, timeout=10
    ).raise_for_status()
    for name in ("bench-bare", "bench-pulse"):
        for suffix in ("", ".DQ", ".XQ"):
            requests.delete(f"{api}/queues/pulse_bench/{name}{suffix}", timeout=10)
    subprocess.run(
        [sys.executable, "-m", "pulse.cli", "migrate"], env=os.environ, check=True, stdout=subprocess.DEVNULL
    )
    # Declare each queue as its variant's broker does (Pulse's with priorities).
    for module, queue in VARIANTS.values():
        importlib.import_module(module).broker.declare_queue(queue, ensure=True)


def channel() -> pika.adapters.blocking_connection.BlockingChannel:
    return pika.BlockingConnection(pika.URLParameters(os.environ["PULSE_BROKER_URL"])).channel()


def fill(queue: str, count: int) -> None:
    ch = channel()
    for _ in range(count):
        body = {
            "queue_name": queue,
            "actor_name": "noop",
            "args": [],
            "kwargs": {},
            "options": {},
            "message_id": str(uuid.uuid4()),
            "message_timestamp": int(time.time() * 1000),
        }
        ch.basic_publish("", queue, json.dumps(body).encode(), pika.BasicProperties(delivery_mode=2))
    while ch.queue_declare(queue, passive=True).method.message_count < count:
        ch.connection.sleep(0.05)
    ch.connection.close()


def run(variant: str, count: int, processes: int, threads: int) -> float:
    module, queue = VARIANTS[variant]
    fill(queue, count)
    env = {**os.environ, "PULSE_METRICS_PORT": str(free_port())}
    command = [sys.executable, "-m", "dramatiq", module, "--queues", queue]
    worker = subprocess.Popen(
        [*command, "--processes", str(processes), "--threads", str(threads)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        return measure(worker, queue, count)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(60)


def measure(worker: subprocess.Popen, queue: str, count: int) -> float:
    ch = channel()
    started = None
    while True:
        ready = ch.queue_declare(queue, passive=True).method.message_count
        now = time.perf_counter()
        if started is None and ready < count:
            started = now
        if started is not None and ready == 0:
            ch.connection.close()
            return count / (now - started)
        if worker.poll() is not None:
            raise SystemExit(f"the {queue} worker exited with {worker.returncode}")
        time.sleep(0.01)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()

    prepare()
    results: dict[str, list[float]] = {"bare": [], "pulse": []}
    for round_ in range(1, args.rounds + 1):
        for variant in ("bare", "pulse"):
            rate = run(variant, args.messages, args.processes, args.threads)
            results[variant].append(rate)
            print(f"round {round_} {variant:>5}: {rate:8.0f} messages/s", flush=True)
    bare, pulse = (statistics.median(results[v]) for v in ("bare", "pulse"))
    workers = f"{args.processes} processes x {args.threads} threads"
    print(f"\n{args.messages} no-op messages, {workers}, median of {args.rounds} rounds")
    print(f"bare dramatiq : {bare:8.0f} messages/s")
    print(f"pulse         : {pulse:8.0f} messages/s")
    print(f"ratio         : {pulse / bare:8.2f}  (goal >= 0.80)")


if __name__ == "__main__":
    main()
