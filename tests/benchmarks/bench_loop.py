"""The scheduling loop's ceiling: how many checks one loop (one thread) can claim and send a second.

    python tests/benchmarks/bench_loop.py --batch 833 --rounds 10

It migrates its own database and vhost (pulse_bench_loop), creates 20,000 components all due,
then, in rolled-back transactions, claims ``--batch`` of them at a time as the uptime loop does
and publishes their check messages (`checks`, up to 16 checks each) with `BatchPublisher` in one
RabbitMQ transaction. It prints, per check, the claim and the send in wall time and in this
thread's CPU, against two baselines run in the same process on the same messages: bare pika
(`basic_publish` of the encoded bodies, one transaction) and pika writing the batch with one
socket flush (its internal channel: what a publisher could save). The ceiling is one second over
the claim and the send of one check.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.benchmarks.bench_uptime import create_components
from tests.benchmarks.measure import drop_vhost, environment, reset

NAME = "pulse_bench_loop"
ENV = environment(NAME)
COMPONENTS = 20_000


def timed(work: Callable[[], object], count: int) -> tuple[float, float]:
    """(wall, CPU of this thread) in µs per item of ``work``, which handles ``count`` items."""
    wall, cpu = time.perf_counter(), time.thread_time()
    work()
    return (time.perf_counter() - wall) * 1e6 / count, (time.thread_time() - cpu) * 1e6 / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=833, help="checks claimed at once (2.5 s of 20,000 every 60 s)")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    reset(NAME)
    os.environ.update(ENV)
    with psycopg.connect(ENV["PULSE_DATABASE_URL"], autocommit=True) as conn:
        create_components(conn, COMPONENTS, 60, "http://127.0.0.1:9/", datetime.now(UTC) - timedelta(minutes=1))
    try:
        measure(args.batch, args.rounds)
    finally:
        drop_vhost(NAME)


def measure(batch: int, rounds: int) -> None:
    import pulse.actors  # noqa: F401  (the broker, the queues)
    from pulse.config import get_settings
    from pulse.rabbitmq.publish import BatchPublisher

    publisher = BatchPublisher(get_settings())
    results: dict[str, list[tuple[float, float]]] = {}
    for _ in range(rounds):
        for name, figures in one_round(publisher, batch).items():
            results.setdefault(name, []).append(figures)
    publisher.close()

    median = {name: tuple(statistics.median(v[i] for v in values) for i in (0, 1)) for name, values in results.items()}
    print(f"\n{COMPONENTS} components, {batch} claimed and sent at a time, median of {rounds} rounds, per check:")
    for name, (wall, cpu) in median.items():
        print(f"  {name:28}: {wall:6.1f} µs wall, {cpu:6.1f} µs CPU")
    ceiling = 1e6 / (median["claim"][0] + median["send (BatchPublisher)"][0])
    bare_cpu = median["baseline: bare pika"][1]
    print(f"one leg's ceiling            : {ceiling:,.0f} checks/s (claim + send, wall)")
    print(f"send CPU / bare pika         : {median['send (BatchPublisher)'][1] / bare_cpu:.2f} x")
    print(f"one flush / bare pika        : {median['baseline: pika, one flush'][1] / bare_cpu:.2f} x")


def one_round(publisher, batch: int) -> dict[str, tuple[float, float]]:
    """Claim and send ``batch`` checks as the loop does (rolled back), then the baselines."""
    import pika

    from pulse.db import db
    from schedules.uptime import UPTIME

    figures, claimed = {}, []
    horizon = datetime.now(UTC) + timedelta(hours=1)  # every component is due
    with db.atomic() as transaction:
        figures["claim"] = timed(lambda: claimed.extend(UPTIME.claim(horizon, batch)), batch)
        figures["send (BatchPublisher)"] = timed(lambda: publisher.publish(UPTIME.messages(claimed)), batch)
        transaction.rollback()
    channel = publisher._open()
    properties = pika.BasicProperties(delivery_mode=2)
    bodies = [(m.queue_name, m.encode()) for m in UPTIME.messages(claimed)]

    def bare(publish: Callable) -> Callable[[], None]:
        def run() -> None:
            for queue, body in bodies:
                publish("", queue, body, properties)
            channel.tx_commit()

        return run

    figures["baseline: bare pika"] = timed(bare(channel.basic_publish), batch)
    figures["baseline: pika, one flush"] = timed(bare(channel._impl.basic_publish), batch)
    return figures


if __name__ == "__main__":
    main()
