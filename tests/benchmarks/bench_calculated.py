"""Calculated metrics under a burst: M metrics of 5 variables each over S sources, S x 10 source
updates in 10 s.

    python tests/benchmarks/bench_calculated.py --metrics 1000 --sources 5000 --bursts 2

It migrates its own database (pulse_bench_calculated) and vhost, applies a file of S metrics
queries (paused: the burst feeds them, no vendor does) and M calculated metrics with `pulse apply`,
starts `dramatiq pulse.actors` and `periodiq pulse.actors`, waits for the first evaluations, then
for each burst:

1. feeds 10 rounds, one a second: each source gets a new value once per round, in a new random
   order each round, 250 sources every 50 ms, each batch one statement that writes the queries'
   values as a poll's statement does, which marks what they feed (the triggers of
   pulse/migrations/0014_calculated_marks.py; a poll also writes its data point: 5,000 polls a
   second are more than two cores can run, and the source writes are not what is measured); the
   feeder and its PostgreSQL backend run at nice -10, so that the burst keeps to its 10 s while
   Pulse works;
2. waits until every metric shows the value its formula gives for the last round's inputs;
3. prints the evaluations per metric (data points written since the burst began), the time from
   the burst's last update until each metric showed its final value (p50, p99, max), and the CPU
   per evaluation of the workers and scheduler, of RabbitMQ (a node of the benchmark's own), and of
   PostgreSQL (the backends of the benchmark's database, the feeder's among them: it also ran the
   source writes).

Beside it, in the same process: a plain loop of `numexpr.evaluate` over the same formulas
(translated by hand to numexpr, with `global_dict={}`), and Pulse's evaluator over them in-process
(`pulse.calculated.evaluation.evaluate`): CPU per evaluation and the ratios.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numexpr
import psycopg
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pulse.calculated.evaluation import evaluate
from pulse.calculated.formula import parse
from tests.benchmarks.measure import (
    OWN_BROKER,
    ROOT,
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
from tests.support.wait import wait_for
from tests.support.worker import free_port

NAME = "pulse_bench_calculated"
ENV = environment(NAME, OWN_BROKER)
ROUNDS, ROUND_S, BATCH = 10, 1.0, 250
# Each formula in mathjs syntax, and the same computation written for numexpr by hand.
FORMULAS = [
    ("(a + b + c) / max(d + e, 1) * 100", "(a + b + c) / where(d + e > 1, d + e, 1) * 100"),
    ("sqrt(a ^ 2 + b ^ 2) + abs(c - d) / (e + 1)", "sqrt(a ** 2 + b ** 2) + abs(c - d) / (e + 1)"),
    ("a > b ? c * 2 : d + e", "where(a > b, c * 2, d + e)"),
    ("min(a, b, c) + max(d, e) - 7", "where(a < b, where(a < c, a, c), where(b < c, b, c)) + where(d > e, d, e) - 7"),
    ("log(a + 1) * 10 + b / (c + d + e + 1)", "log(a + 1) * 10 + b / (c + d + e + 1)"),
]
NAMES = "abcde"


def config(metrics: int, sources: int) -> dict:
    """The file: S paused queries, M calculated metrics, metric k reading 5 sources from 5k."""
    return {
        "organizations": [
            {
                "slug": "bench",
                "name": "Bench",
                "integrations": [{"key": "prom", "type": "prometheus", "url": "http://127.0.0.1:9"}],
                "metrics": [
                    {"key": f"s{i}", "name": f"S{i}", "integration": "prom", "query": f"s{i}", "paused": True}
                    for i in range(sources)
                ],
                "calculated_metrics": [
                    {
                        "key": f"c{k}",
                        "name": f"C{k}",
                        "formula": FORMULAS[k % len(FORMULAS)][0],
                        "variables": {n: {"metric": f"s{(5 * k + j) % sources}"} for j, n in enumerate(NAMES)},
                        "max_age": "1h",
                    }
                    for k in range(metrics)
                ],
            }
        ]
    }


def value(source: int, round_: int, burst: int) -> float:
    return float((source * 7 + round_ * 13 + burst * 31) % 97 + 1)


# A batch of polls' values, written in one statement as a poll's own statement writes one
# (`pulse.metrics.poll.RECORD`, which also writes each poll's data point); its trigger marks what
# they feed.
WRITE = """
UPDATE metrics_query q SET last_value = v.value, last_value_at = %(slot)s, last_polled_at = %(slot)s, state = 'ok'
FROM unnest(%(ids)s::bigint[], %(values)s::float8[]) AS v (id, value)
WHERE q.id = v.id
"""


def feed(conn: psycopg.Connection, ids: list[int], burst: int) -> tuple[float, float, float]:
    """The burst: every source once per round, in a new order each round, `BATCH` sources per
    statement. Returns its start and end (epoch seconds), and how late its latest batch was."""
    started, late = time.time(), 0.0
    for round_ in range(ROUNDS):
        order = random.sample(range(len(ids)), len(ids))
        batches = [order[i : i + BATCH] for i in range(0, len(order), BATCH)]
        for n, batch in enumerate(batches):
            pause = started + round_ * ROUND_S + n * ROUND_S / len(batches) - time.time()
            if pause > 0:
                time.sleep(pause)
            late = max(late, -pause)
            values = [value(source, round_, burst) for source in batch]
            conn.execute(WRITE, {"slot": datetime.now(UTC), "ids": [ids[i] for i in batch], "values": values})
    return started, time.time(), late


def expected(metrics: int, sources: int, burst: int) -> dict[str, float | None]:
    results = {}
    for k in range(metrics):
        values = {n: value((5 * k + j) % sources, ROUNDS - 1, burst) for j, n in enumerate(NAMES)}
        result = evaluate(parse(FORMULAS[k % len(FORMULAS)][0]), values).value
        results[f"c{k}"] = None if result is None else float(result)
    return results


def shows(conn: psycopg.Connection, wanted: dict[str, float | None]) -> bool:
    rows = conn.execute("SELECT key, last_value, pending_since IS NULL AND sent_at IS NULL FROM calculated_metric")
    return all(settled and _same(last, wanted[key]) for key, last, settled in rows)


def _same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9))


def in_process(metrics: int, repeat: int) -> tuple[float, float]:
    """CPU microseconds per evaluation: a plain numexpr loop, and Pulse's evaluator."""
    values = [{n: float(i + j + 1) for j, n in enumerate(NAMES)} for i in range(metrics)]
    plain = [FORMULAS[k % len(FORMULAS)][1] for k in range(metrics)]
    parsed = [parse(FORMULAS[k % len(FORMULAS)][0]) for k in range(metrics)]
    started = time.process_time()
    for _ in range(repeat):
        for text, given in zip(plain, values, strict=True):
            numexpr.evaluate(text, local_dict=given, global_dict={})
    numexpr_us = (time.process_time() - started) / (repeat * metrics) * 1e6
    started = time.process_time()
    for _ in range(repeat):
        for formula, given in zip(parsed, values, strict=True):
            evaluate(formula, given)
    pulse_us = (time.process_time() - started) / (repeat * metrics) * 1e6
    return numexpr_us, pulse_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--metrics", type=int, default=1000)
    parser.add_argument("--sources", type=int, default=5000)
    parser.add_argument("--bursts", type=int, default=2)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    numexpr_us, pulse_us = in_process(args.metrics, 20)
    with own_rabbitmq() as rabbit:
        run(args, rabbit, numexpr_us, pulse_us)


def run(args: argparse.Namespace, rabbit: Callable[[], list[int]], numexpr_us: float, pulse_us: float) -> None:
    env = {**os.environ, **ENV, "PULSE_METRICS_PORT": str(free_port())}
    reset(NAME, OWN_BROKER)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as file:
        yaml.safe_dump(config(args.metrics, args.sources), file)
        file.flush()
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "pulse.cli", "apply", "-f", file.name], env=env, cwd=ROOT, check=True)
        applied_s = time.monotonic() - started

    workers, scheduler = start_pulse(env, args.processes, args.threads)
    postgres = Tracked(backends(NAME))
    results = []
    try:
        with psycopg.connect(ENV["PULSE_DATABASE_URL"], autocommit=True) as conn:
            # The load generator keeps to its schedule (it and its PostgreSQL backend before Pulse's
            # processes): on two cores, Pulse's evaluations would otherwise slow the burst itself.
            for pid in (0, conn.execute("SELECT pg_backend_pid()").fetchone()[0]):
                os.setpriority(os.PRIO_PROCESS, pid, -10)
            # ids[i] is the source s{i}
            ids = [row[0] for row in conn.execute("SELECT id FROM metrics_query ORDER BY substr(key, 2)::int")]
            wait_for(
                lambda: (
                    conn.execute("SELECT count(*) FROM calculated_metric WHERE last_evaluated_at IS NULL").fetchone()[0]
                    == 0
                ),
                "the first evaluations",
                timeout=150,
            )
            for burst in range(args.bursts):
                time.sleep(5)
                watched = tree(workers.pid) + tree(scheduler.pid)
                groups = (watched, rabbit())
                before = [*(cpu_seconds(group) for group in groups), postgres.seconds()]
                began, ended, late = feed(conn, ids, burst)
                wanted = expected(args.metrics, args.sources, burst)
                wait_for(lambda wanted=wanted: shows(conn, wanted), "every metric's final value", timeout=120)
                after = [*(cpu_seconds(group) for group in groups), postgres.seconds()]
                rows = conn.execute(
                    """SELECT c.key, count(p.id), max(p.created_at)
                       FROM calculated_metric c JOIN calculated_metric_data_point p ON p.calculated_metric_id = c.id
                       WHERE p.created_at >= to_timestamp(%s) GROUP BY c.key""",
                    (began,),
                ).fetchall()
                results.append((began, ended, late, rows, [a - b for a, b in zip(after, before, strict=True)]))
    finally:
        postgres.stop()
        stop_pulse(workers, scheduler)

    print(
        f"\n{args.metrics} calculated metrics over {args.sources} sources; bursts of {args.sources * ROUNDS} updates "
        f"in {ROUNDS * ROUND_S:g} s; {args.processes} worker processes x {args.threads} threads; "
        f"`pulse apply` of the file: {applied_s:.1f} s"
    )
    for n, (began, ended, late, rows, cpu) in enumerate(results, 1):
        counts = [count for _, count, _ in rows]
        lags = [last.timestamp() - ended for _, _, last in rows]
        evaluations = sum(counts)
        print(
            f"burst {n}: fed in {ended - began:.1f} s ({args.sources * ROUNDS / (ended - began):.0f} updates/s, "
            f"a batch at most {late * 1000:.0f} ms late); "
            f"evaluations {evaluations} ({evaluations / args.metrics:.2f} per metric, max {max(counts)}, "
            f"{sum(c > 2 for c in counts)} metrics over 2); final value shown after the last update: "
            f"p50 {percentile(lags, 0.5):.2f} s, p99 {percentile(lags, 0.99):.2f} s, max {max(lags):.2f} s"
        )
        workers_ms, rabbit_ms, postgres_ms = (seconds / evaluations * 1000 for seconds in cpu)
        print(
            f"  CPU per evaluation: workers and scheduler {workers_ms:.2f} ms, RabbitMQ {rabbit_ms:.2f} ms; "
            f"PostgreSQL {postgres_ms:.2f} ms (with the {args.sources * ROUNDS} source writes: "
            f"{cpu[2] / (args.sources * ROUNDS) * 1e6:.0f} us per update)"
        )
    print(
        f"in-process, per evaluation: plain numexpr loop {numexpr_us:.1f} us, Pulse's evaluator {pulse_us:.1f} us "
        f"({pulse_us / numexpr_us:.1f} x); the workers' CPU per evaluation is "
        + ", ".join(f"{cpu[0] / sum(c for _, c, _ in rows) * 1e6 / numexpr_us:.0f}" for *_, rows, cpu in results)
        + " x the plain numexpr loop"
    )


if __name__ == "__main__":
    main()
