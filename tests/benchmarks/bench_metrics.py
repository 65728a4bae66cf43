"""Metrics polls at scale: N Prometheus queries every I seconds against a real local Prometheus.

    python tests/benchmarks/bench_metrics.py --queries 5000 --interval 60 --minutes 3

It migrates its own database (pulse_bench_metrics) and vhost and starts a real Prometheus
(Debian's `prometheus`) scraping a small exporter (`tests/support/prometheus.py`). Then:

1. the baseline: a plain loop of the same queries, one thread with one kept-alive
   `requests.Session`, for `--baseline` seconds: queries/s; and Pulse's own request
   (`pulse.net.fetch`) in one thread, kept alive and with a connection per request, alternately;
2. steady: the queries with their first slots spread over one interval, polled by
   `dramatiq pulse.actors` and `periodiq pulse.actors`; after one interval of warm-up it measures
   a window of T minutes: polls/s; the lag (data point written minus its slot: the start lag plus
   the query's own time) p50/p99/max; missed slots (due in the window, no data point) and
   duplicated polls (queries Prometheus answered beyond the data points written); the CPU per
   poll of the workers and scheduler, RabbitMQ (a node of the benchmark's own), PostgreSQL (the
   backends of the benchmark's database) and Prometheus;
3. saturation: the same queries made due every `--saturate` seconds, more than the workers can
   poll, for one minute: polls/s, and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

import psycopg
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pulse.net import AddressPolicy, Request, fetch
from tests.benchmarks.measure import (
    OWN_BROKER,
    Tracked,
    backends,
    cpu_seconds,
    environment,
    own_rabbitmq,
    percentile,
    reset,
    sleep_until,
    start_pulse,
    stop_pulse,
    tree,
)
from tests.support.prometheus import Prometheus
from tests.support.worker import free_port

NAME = "pulse_bench_metrics"
ENV = environment(NAME, OWN_BROKER)
SERIES = 10  # series of the exporter's metric; query i reads series i % SERIES
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def queries(count: int) -> list[str]:
    """Distinct queries, each answered with one series."""
    return [f'pulse_bench_value{{series="s{i % SERIES}"}} + {i}' for i in range(count)]


def baseline(url: str, texts: list[str], seconds: float) -> float:
    """The plain loop: one thread, one kept-alive `requests.Session`; queries/s."""
    done, started = 0, time.monotonic()
    with requests.Session() as session:
        while time.monotonic() - started < seconds:
            answer = session.post(f"{url}/api/v1/query", data={"query": texts[done % len(texts)]}, timeout=5)
            assert answer.json()["data"]["result"], answer.text
            done += 1
    return done / (time.monotonic() - started)


def fetched(url: str, texts: list[str], seconds: float, keep_alive: bool) -> tuple[float, float]:
    """Pulse's request in a loop, one thread: (queries/s, client CPU ms per query)."""
    done, started, cpu = 0, time.monotonic(), time.process_time()
    while time.monotonic() - started < seconds:
        body = urlencode({"query": texts[done % len(texts)]})
        request = Request("POST", f"{url}/api/v1/query", FORM, body, timeout_s=5, keep_alive=keep_alive)
        response, error = fetch(request, AddressPolicy())
        assert error is None and response.status == 200, error
        done += 1
    return done / (time.monotonic() - started), (time.process_time() - cpu) / done * 1000


def answered(url: str) -> int:
    """Instant queries Prometheus has answered since it started (its own counter)."""
    text = requests.get(f"{url}/metrics", timeout=5).text
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if line.startswith("prometheus_http_requests_total{") and 'handler="/api/v1/query"' in line
    )


def create_queries(conn: psycopg.Connection, texts: list[str], interval: int, url: str, first: datetime) -> None:
    org = conn.execute("INSERT INTO organization (slug, name) VALUES ('bench', 'Bench') RETURNING id").fetchone()[0]
    integration = conn.execute(
        "INSERT INTO integration (organization_id, key, type, settings) VALUES (%s, 'prom', 'prometheus', %s)"
        " RETURNING id",
        (org, json.dumps({"url": url})),
    ).fetchone()[0]
    columns = "organization_id, integration_id, key, name, query, interval_seconds, warning, critical, next_poll_at"
    with conn.cursor().copy(f"COPY metrics_query ({columns}) FROM STDIN") as copy:
        for i, text in enumerate(texts):
            slot = first + timedelta(seconds=interval * i / len(texts))
            copy.write_row((org, integration, f"q{i}", f"Query {i}", text, interval, 1e9, 2e9, slot))


def expected_slots(count: int, interval: int, first: datetime, start: datetime, end: datetime) -> int:
    """Slots due in [start, end) of queries whose first slots are spread over one interval from ``first``."""
    expected = 0
    for i in range(count):
        slot = first + timedelta(seconds=interval * i / count)
        while slot < start:
            slot += timedelta(seconds=interval)
        while slot < end:
            expected += 1
            slot += timedelta(seconds=interval)
    return expected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--interval", type=int, default=60, help="seconds")
    parser.add_argument("--minutes", type=float, default=3)
    parser.add_argument("--saturate", type=int, default=5, help="seconds: the interval of the saturation phase")
    parser.add_argument("--baseline", type=float, default=20, help="seconds of the plain loop")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    env = {**os.environ, **ENV, "PULSE_METRICS_PORT": str(free_port())}
    texts = queries(args.queries)

    with own_rabbitmq() as rabbit, Prometheus() as prometheus:
        reset(NAME, OWN_BROKER)
        prometheus.set("pulse_bench_value", **{f"s{i}": 100.0 + i for i in range(SERIES)})
        plain = baseline(prometheus.url, texts, args.baseline)
        rounds = [(keep, fetched(prometheus.url, texts, 5, keep)) for _ in range(3) for keep in (True, False)]

        first = datetime.now(UTC) + timedelta(seconds=20)
        with psycopg.connect(ENV["PULSE_DATABASE_URL"], autocommit=True) as conn:
            create_queries(conn, texts, args.interval, prometheus.url, first)
        asked_before = answered(prometheus.url)
        workers, scheduler = start_pulse(env, args.processes, args.threads)
        try:
            start = first + timedelta(seconds=args.interval + 15)  # warm-up: one interval, and a tick or so
            end = start + timedelta(minutes=args.minutes)
            sleep_until(start)
            watched = tree(workers.pid) + tree(scheduler.pid)
            others = (rabbit(), [prometheus.process.pid])
            postgres = Tracked(backends(NAME))
            before = [cpu_seconds(watched), cpu_seconds(others[0]), postgres.seconds(), cpu_seconds(others[1])]
            sleep_until(end)
            after = [cpu_seconds(watched), cpu_seconds(others[0]), postgres.seconds(), cpu_seconds(others[1])]
            postgres.stop()
            sleep_until(end + timedelta(seconds=10))  # let the window's last polls finish

            with psycopg.connect(ENV["PULSE_DATABASE_URL"], autocommit=True) as conn:
                lags = [
                    row[0]
                    for row in conn.execute(
                        "SELECT extract(epoch FROM created_at - scheduled_at) FROM metric_data_point"
                        " WHERE scheduled_at >= %s AND scheduled_at < %s AND value IS NOT NULL",
                        (start, end),
                    )
                ]
                no_data = conn.execute(
                    "SELECT count(*) FROM metric_data_point WHERE scheduled_at >= %s AND scheduled_at < %s"
                    " AND value IS NULL",
                    (start, end),
                ).fetchone()[0]
                # Saturation: every query due now and every --saturate seconds from now on.
                conn.execute("UPDATE metrics_query SET interval_seconds = %s, next_poll_at = now()", (args.saturate,))
                time.sleep(15)  # the queue fills; then measure
                counted = conn.execute("SELECT count(*) FROM metric_data_point").fetchone()[0]
                began = time.monotonic()
                time.sleep(60)
                saturated = (conn.execute("SELECT count(*) FROM metric_data_point").fetchone()[0] - counted) / (
                    time.monotonic() - began
                )
            scheduler.send_signal(signal.SIGTERM)
            scheduler.wait(30)
        finally:
            stop_pulse(workers, scheduler)
        with psycopg.connect(ENV["PULSE_DATABASE_URL"]) as conn:
            points = conn.execute("SELECT count(*) FROM metric_data_point").fetchone()[0]
        asked = answered(prometheus.url) - asked_before

    expected = expected_slots(args.queries, args.interval, first, start, end)
    window = (end - start).total_seconds()
    polls = len(lags) + no_data
    workers_ms, rabbit_ms, postgres_ms, prometheus_ms = [
        (a - b) / max(1, polls) * 1000 for a, b in zip(after, before, strict=True)
    ]
    print(
        f"\n{args.queries} Prometheus queries every {args.interval} s for {args.minutes:g} min, "
        f"{args.processes} worker processes x {args.threads} threads"
    )
    print(f"polls/s           : {polls / window:8.1f}  (expected {expected / window:.1f}; {no_data} without data)")
    print(
        f"lag (written-slot): p50 {percentile(lags, 0.5) * 1000:.0f} ms, p99 {percentile(lags, 0.99) * 1000:.0f} ms,"
        f" max {max(lags, default=float('nan')) * 1000:.0f} ms"
    )
    # Every poll asks once and writes one point: queries answered beyond the points are duplicates.
    print(f"missed, duplicated: {expected - polls}, {asked - points}")
    print(
        f"CPU per poll      : {workers_ms + rabbit_ms + postgres_ms:.2f} ms (workers and scheduler {workers_ms:.2f},"
        f" RabbitMQ {rabbit_ms:.2f}, PostgreSQL {postgres_ms:.2f}); Prometheus answering it {prometheus_ms:.2f} ms"
    )
    print(
        f"saturation        : Pulse {saturated:.0f} polls/s (asked {args.queries / args.saturate:.0f}/s); plain loop "
        f"(one thread, one kept-alive requests.Session) {plain:.0f} queries/s; ratio {saturated / plain:.2f} x"
    )

    kept = [figures for keep, figures in rounds if keep]
    fresh = [figures for keep, figures in rounds if not keep]
    print(
        "one thread, pulse.net.fetch: kept alive "
        + ", ".join(f"{rate:.0f}/s ({cpu:.2f} ms CPU)" for rate, cpu in kept)
        + "; a connection per request "
        + ", ".join(f"{rate:.0f}/s ({cpu:.2f} ms CPU)" for rate, cpu in fresh)
        + f"; ratio {sum(r for r, _ in kept) / sum(r for r, _ in fresh):.2f} x"
    )


if __name__ == "__main__":
    main()
