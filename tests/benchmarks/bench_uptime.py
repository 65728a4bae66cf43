"""Uptime at scale: N components every I seconds against a fast local target, for T minutes.

    python tests/benchmarks/bench_uptime.py --components 2000 --interval 20 --minutes 2
    python tests/benchmarks/bench_uptime.py --components 20000 --interval 60 --minutes 3
    PULSE_QUEUE_TYPE=quorum python tests/benchmarks/bench_uptime.py   # quorum queues, one node
    python tests/benchmarks/bench_uptime.py --cluster 3                # quorum queues, 3 nodes
    python tests/benchmarks/bench_uptime.py --url http://127.0.0.1:8080/   # a target of your own
    python tests/benchmarks/bench_uptime.py --components 2000 --tcp 2000 --dns 2000   # other kinds beside
    python tests/benchmarks/bench_uptime.py --components 0 --tcp 2000       # one kind alone: its CPU per check
    python tests/benchmarks/bench_uptime.py --components 2000 --locations 3 --threads 8   # from 3 locations

It migrates its own database (pulse_bench_uptime) and vhost, starts the target
(tests/benchmarks/fast_target.py), times plain `requests` against it (a fresh connection per
request, one process: the baseline), creates the components with their first slots spread over one
interval, runs `dramatiq pulse.actors` and `periodiq pulse.actors`, and after one interval of
warm-up measures a window of T minutes. It prints checks/s; the start lag (when the request began
minus its slot) p50/p99/max; missed slots (due in the window, never checked) and duplicated checks
(requests the target answered beyond the checks recorded); the CPU of the workers, the
scheduler, RabbitMQ and PostgreSQL per check; the workers' peak RSS; and the ratio to the baseline.

With ``--url URL`` it checks that target instead (a local nginx, say, as a user points Pulse at
real sites; conditions ``[STATUS] < 400`` and ``[RESPONSE_TIME] < 1000``): duplicated requests are
then not counted (they are counted at the benchmark's own target only), and the baseline times
plain `requests` against that URL.

With ``--tcp N`` and ``--dns N`` it adds N components of the tcp kind (connect to a local port and
hang up) and N of the dns kind (an A query to a local UDP resolver), each kind spread over the
interval on its own, against tests/benchmarks/fast_kinds.py; it prints checks/s, start lag, missed
and duplicated (connections or queries the target saw beyond the checks recorded) for each kind,
and times a plain client of each kind in one process (socket connect and close; dnspython's
`dns.query.udp`) for its CPU per operation. The CPU per check is that of every kind together: run a
kind alone (``--components 0``) for its own.

With ``--logs FILE`` the workers log at INFO into FILE (a line per completed message among them)
rather than at WARNING to nowhere: run it with and without, back to back, for what the lines cost.

With ``--locations N`` the http components are checked from N locations (l1 … lN, the default
majority quorum): it makes each location's queue, and beside the central workers and the scheduler
starts one worker process group per location (``PULSE_LOCATION``, its ``PULSE_LOCATION_KEY``
derived from a benchmark secret; ``--location-processes`` x ``--location-threads`` each). It
prints location checks/s (``location_check`` rows) and verdicts/s (``uptime_check`` rows), the
start lag of a location's check (its request minus the slot), the verdict latency (the verdict's
row written minus the slot) p50/p99/max, missed slots (due in the window, no verdict), doubled
checks (requests the target answered beyond the location checks recorded, and slots with more
location rows than locations), and the CPU of the central workers, the location workers, the
scheduler, RabbitMQ and PostgreSQL per location check and per verdict.

Without it, Pulse runs on a RabbitMQ node of the benchmark's own (`measure.own_rabbitmq`), whose
CPU is RabbitMQ's; PostgreSQL's is that of the backends of the benchmark's database. With
``--cluster N`` it starts a RabbitMQ cluster of N nodes of its own (tests/support/cluster.py:
ports 5781 and up, the system's node untouched), runs Pulse on it with quorum queues, and counts
the CPU of those N nodes as RabbitMQ's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pulse import rabbitmq
from pulse.config import Settings
from pulse.locations import dispatch, wire
from tests.benchmarks.measure import (
    MACHINE_BROKER,
    OWN_BROKER,
    ROOT,
    Broker,
    Tracked,
    backends,
    cpu_seconds,
    drop_vhost,
    environment,
    machine_busy_seconds,
    own_rabbitmq,
    peak_rss_mib,
    percentile,
    reset,
    sleep_until,
    start_pulse,
    stop_pulse,
    tree,
)
from tests.support.cluster import Cluster, beam_pids
from tests.support.worker import free_port

NAME = "pulse_bench_uptime"
ENV = environment(NAME, OWN_BROKER)
OWN = '["[STATUS] == 200", "[BODY].status == UP", "[RESPONSE_TIME] < 1000"]'  # fast_target.py's answer
OTHER = '["[STATUS] < 400", "[RESPONSE_TIME] < 1000"]'
#: The central secret of the benchmark's locations (each location's key derives from it).
SECRET = "the-secret-of-the-benchmark-locations-only"


TCP = '["[CONNECTED] == true", "[RESPONSE_TIME] < 1000"]'
DNS = '["[DNS_RCODE] == NOERROR", "[BODY] == 127.0.0.1", "[RESPONSE_TIME] < 1000"]'


def start_target() -> tuple[subprocess.Popen, str]:
    """Start tests/benchmarks/fast_target.py: the process and the URL to check."""
    port = free_port()
    target = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/benchmarks/fast_target.py"), str(port)], stdout=subprocess.PIPE, text=True
    )
    assert target.stdout and target.stdout.readline().strip() == "ready"
    return target, f"http://127.0.0.1:{port}/health"


def stop_target(target: subprocess.Popen) -> int:
    """Stop the target; how many requests it answered."""
    target.send_signal(signal.SIGTERM)
    return json.loads(target.communicate(timeout=30)[0].splitlines()[-1])["requests"]


def start_kinds_target() -> tuple[subprocess.Popen, int, int]:
    """Start tests/benchmarks/fast_kinds.py: the process, its TCP port and its DNS port."""
    tcp_port, dns_port = free_port(), free_port()
    target = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/benchmarks/fast_kinds.py"), str(tcp_port), str(dns_port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert target.stdout and target.stdout.readline().strip() == "ready"
    return target, tcp_port, dns_port


def stop_kinds_target(target: subprocess.Popen) -> dict[str, int]:
    """Stop it; the connections and queries it answered, by kind."""
    target.send_signal(signal.SIGTERM)
    return json.loads(target.communicate(timeout=30)[0].splitlines()[-1])


def plain_cpu_ms(operation: Callable[[], object], seconds: float = 5) -> tuple[int, float]:
    """``operation`` repeated for ``seconds`` in this process: (times done, CPU milliseconds each)."""
    done, deadline, cpu = 0, time.monotonic() + seconds, time.process_time()
    while time.monotonic() < deadline:
        operation()
        done += 1
    return done, (time.process_time() - cpu) * 1000 / done


def plain_tcp(port: int) -> None:
    socket.create_connection(("127.0.0.1", port), timeout=5).close()


def plain_dns(port: int) -> None:
    import dns.message
    import dns.query

    dns.query.udp(dns.message.make_query("c0.bench.example", "A"), "127.0.0.1", port=port, timeout=5)


def baseline(url: str, seconds: float = 10) -> tuple[int, float]:
    """Plain `requests`, a fresh connection per request, one process: (requests made, requests/s)."""
    done, deadline = 0, time.monotonic() + seconds
    started = time.monotonic()
    while time.monotonic() < deadline:
        requests.get(url, timeout=5).raise_for_status()
        done += 1
    return done, done / (time.monotonic() - started)


def organization(conn: psycopg.Connection) -> int:
    """The benchmark's organization, created on first use."""
    found = conn.execute("SELECT id FROM organization WHERE slug = 'bench'").fetchone()
    if found:
        return found[0]
    return conn.execute("INSERT INTO organization (slug, name) VALUES ('bench', 'Bench') RETURNING id").fetchone()[0]


def create_components(
    conn: psycopg.Connection, count: int, interval: int, url: str, first: datetime, conditions: str = OWN
) -> None:
    org = organization(conn)
    with conn.cursor().copy(
        "COPY component (organization_id, key, name, url, interval_seconds, timeout_ms, conditions, next_check_at)"
        " FROM STDIN"
    ) as copy:
        for i in range(count):
            slot = first + timedelta(seconds=interval * i / count)
            copy.write_row((org, f"c{i}", f"Component {i}", url, interval, 5000, conditions, slot))


def locate(conn: psycopg.Connection, locations: list[str]) -> None:
    """The http components are checked from ``locations`` (the default majority quorum)."""
    conn.execute("UPDATE component SET locations = %s WHERE kind = 'http'", (locations,))


def declare_locations(env: dict[str, str], locations: list[str]) -> None:
    """Make each location's queue, as `pulse locations add` does, before any worker starts."""
    settings = Settings.from_env(env)
    with rabbitmq.channel(settings) as channel:
        for location in locations:
            dispatch.declare(channel, location, settings.queue_type)


def start_locations(
    env: dict[str, str], locations: list[str], processes: int, threads: int, log: Any = None
) -> list[subprocess.Popen]:
    """One `dramatiq pulse.actors` process group per location, with its name and key and no secret."""
    started = []
    for location in locations:
        own = {k: v for k, v in env.items() if k != "PULSE_LOCATIONS_SECRET"}
        own |= {"PULSE_LOCATION": location, "PULSE_LOCATION_KEY": wire.key(SECRET, location)}
        own["PULSE_METRICS_PORT"] = str(free_port())
        command = ["-m", "dramatiq", "pulse.actors", "--processes", str(processes), "--threads", str(threads)]
        started.append(
            subprocess.Popen(
                [sys.executable, *command],
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=log or subprocess.DEVNULL,
                cwd=ROOT,
                env=own,
            )
        )
    return started


def stop_locations(started: list[subprocess.Popen]) -> None:
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in started:
        process.wait(120)


def create_kind_components(
    conn: psycopg.Connection, kind: str, count: int, interval: int, target: Callable[[int], dict], first: datetime
) -> None:
    """``count`` components of ``kind`` (tcp or dns), ``target(i)`` the i-th one's target column."""
    org = organization(conn)
    with conn.cursor().copy(
        "COPY component (organization_id, key, name, kind, target, interval_seconds, timeout_ms, conditions,"
        " next_check_at) FROM STDIN"
    ) as copy:
        for i in range(count):
            slot = first + timedelta(seconds=interval * i / count)
            row = (org, f"{kind}{i}", f"{kind} {i}", kind, json.dumps(target(i)), interval, 5000)
            copy.write_row((*row, TCP if kind == "tcp" else DNS, slot))


def dns_target(i: int, port: int) -> dict:
    """The i-th dns component's target: an A query of its own name at the local resolver."""
    return {"query": f"c{i}.bench.example", "record": "A", "resolver": f"127.0.0.1:{port}"}


def expected_slots(count: int, interval: int, first: datetime, start: datetime, end: datetime) -> int:
    """The slots of ``count`` components spread over ``interval`` from ``first`` due in [start, end)."""
    expected = 0
    for i in range(count):
        offset = interval * i / count
        first_in_window = max(0, -(-((start - first).total_seconds() - offset) // interval))
        slot = offset + first_in_window * interval
        while first + timedelta(seconds=slot) < end:
            expected += 1
            slot += interval
    return expected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--components", type=int, default=2000, help="http components")
    parser.add_argument("--tcp", type=int, default=0, metavar="N", help="tcp components beside")
    parser.add_argument("--dns", type=int, default=0, metavar="N", help="dns components beside")
    parser.add_argument("--interval", type=int, default=20, help="seconds")
    parser.add_argument("--minutes", type=float, default=2)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--cluster", type=int, default=0, metavar="N", help="on a RabbitMQ cluster of N nodes")
    parser.add_argument("--url", help="check this target (a local nginx, say) instead of the benchmark's own")
    parser.add_argument("--logs", metavar="FILE", help="the workers log at INFO into FILE")
    parser.add_argument("--locations", type=int, default=0, metavar="N", help="http components checked from N")
    parser.add_argument("--location-processes", type=int, default=1)
    parser.add_argument("--location-threads", type=int, default=8)
    args = parser.parse_args()
    env = {**os.environ, **ENV, "PULSE_METRICS_PORT": str(free_port()), "PULSE_LOCATIONS_SECRET": SECRET}
    if args.logs:
        env["PULSE_LOG_LEVEL"] = "INFO"
    if args.cluster:
        with Cluster(size=args.cluster) as cluster:
            # On the cluster's vhost /; the benchmark's vhost is made on the machine's node, unused.
            env.update(PULSE_BROKER_URL=",".join(cluster.urls()), PULSE_QUEUE_TYPE="quorum")
            env.update(PULSE_RABBITMQ_API_URL=MACHINE_BROKER.api)
            try:
                run(args, env, lambda: [pid for node in cluster.nodes for pid in beam_pids(node)], MACHINE_BROKER)
            finally:
                drop_vhost(NAME)  # quorum queues hold files on the node until deleted
    else:
        with own_rabbitmq() as rabbit:
            run(args, env, rabbit, OWN_BROKER)


def run(args: argparse.Namespace, env: dict[str, str], rabbit: Callable[[], list[int]], broker: Broker) -> None:
    """Measure Pulse with ``env``, counting the CPU of the ``rabbit`` processes as RabbitMQ's; its
    vhost made on ``broker``."""
    reset(NAME, broker)
    target, url = (None, args.url) if args.url else start_target()
    baseline_requests, plain = baseline(url)
    kinds_target, tcp_port, dns_port = start_kinds_target() if args.tcp or args.dns else (None, 0, 0)
    plain_kinds = {}  # kind: (operations the baseline made, its CPU ms per operation)
    if args.tcp:
        plain_kinds["tcp"] = plain_cpu_ms(lambda: plain_tcp(tcp_port))
    if args.dns:
        plain_kinds["dns"] = plain_cpu_ms(lambda: plain_dns(dns_port))

    boot = timedelta(seconds=20)
    first = datetime.now(UTC) + boot
    counts = {"http": args.components, "tcp": args.tcp, "dns": args.dns}
    with psycopg.connect(ENV["PULSE_DATABASE_URL"], autocommit=True) as conn:
        create_components(conn, args.components, args.interval, url, first, OWN if target else OTHER)
        create_kind_components(
            conn, "tcp", args.tcp, args.interval, lambda i: {"host": "127.0.0.1", "port": tcp_port}, first
        )
        create_kind_components(conn, "dns", args.dns, args.interval, lambda i: dns_target(i, dns_port), first)
        locations = [f"l{n}" for n in range(1, args.locations + 1)]
        if locations:
            locate(conn, locations)
    if locations:
        declare_locations(env, locations)
    log = open(args.logs, "w") if args.logs else None  # closed once the workers stop
    workers, scheduler = start_pulse(env, args.processes, args.threads, log=log)
    located = start_locations(env, locations, args.location_processes, args.location_threads, log)
    try:
        start = first + timedelta(seconds=args.interval + 15)  # warm-up: one interval, and a tick or so
        end = start + timedelta(minutes=args.minutes)
        sleep_until(start)
        groups = lambda: [pid for process in located for pid in tree(process.pid)]  # noqa: E731
        postgres = Tracked(backends(NAME))
        watched = (tree(workers.pid), tree(scheduler.pid), rabbit(), groups())
        before = (*map(cpu_seconds, watched[:3]), postgres.seconds(), cpu_seconds(watched[3]), machine_busy_seconds())
        sleep_until(end)
        after = (*map(cpu_seconds, watched[:3]), postgres.seconds(), cpu_seconds(watched[3]), machine_busy_seconds())
        postgres.stop()
        rss = peak_rss_mib(tree(workers.pid)[1:])
        sleep_until(end + timedelta(seconds=15))  # let the window's last checks finish
        scheduler.send_signal(signal.SIGTERM)
        scheduler.wait(30)
    finally:
        stop_pulse(workers, scheduler)
        stop_locations(located)
        if log:
            log.close()
        answered = stop_target(target) if target else None
        answered_kinds = stop_kinds_target(kinds_target) if kinds_target else {}
    # What each target answered beyond its baseline's operations (None: not our target)
    served = {"http": None if answered is None else answered - baseline_requests}
    served |= {kind: answered_kinds[kind] - done for kind, (done, _) in plain_kinds.items()}
    beyond = served["http"]
    if locations:
        served["http"] = None  # counted against the location checks, below
    checks = report(args, env, counts, (first, start, end), served)
    central = (after[0] - before[0], after[1] - before[1], after[2] - before[2], after[3] - before[3])
    if not locations:
        print(f"CPU per check     : {cpu(after[:4] + after[5:], before[:4] + before[5:], checks)}")
    else:
        made = report_locations(args, locations, (first, start, end), beyond)
        spent = (*central, after[4] - before[4], after[5] - before[5])
        print(f"CPU per loc. check: {located_cpu(spent, made)}")
        print(f"CPU per verdict   : {located_cpu(spent, checks)}")
        rate = made / (end - start).total_seconds()
        print(
            f"baseline          : plain requests {plain:.0f} req/s in one process ({1000 / plain:.2f} ms each);"
            f" Pulse {rate:.0f} location checks/s = {rate / plain:.2f} x"
        )
    print(f"worker peak RSS   : {max(rss, default=0):.0f} MiB per process ({sum(rss):.0f} MiB together)")
    rate = checks / (end - start).total_seconds()
    if not locations:
        print(
            f"baseline          : plain requests {plain:.0f} req/s in one process;"
            f" Pulse {rate:.0f} checks/s = {rate / plain:.2f} x"
        )
    for kind, (_, plain_ms) in plain_kinds.items():
        print(f"baseline {kind}      : a plain client's CPU per check {plain_ms:.3f} ms, in one process")


def located_cpu(spent: tuple[float, ...], units: int) -> str:
    """The CPU per unit (location check, verdict) of each part: central workers, scheduler, RabbitMQ,
    PostgreSQL, location workers; and of the machine."""
    central, scheduler, rabbit, postgres, located, machine = (s / max(1, units) * 1000 for s in spent)
    return (
        f"{central + scheduler + rabbit + postgres + located:.2f} ms (central workers {central:.2f}, location"
        f" workers {located:.2f}, scheduler {scheduler:.2f}, RabbitMQ {rabbit:.2f}, PostgreSQL {postgres:.2f});"
        f" whole machine {machine:.2f} ms"
    )


def report_locations(
    args: argparse.Namespace, locations: list[str], times: tuple[datetime, datetime, datetime], beyond: int | None
) -> int:
    """Print the location checks/s, their start lag, the verdict latency, missed and doubled;
    returns the location checks made in the window. ``beyond``: what the target answered beyond
    its baseline."""
    first, start, end = times
    window = (end - start).total_seconds()
    with psycopg.connect(ENV["PULSE_DATABASE_URL"]) as conn:
        lags = [
            lag
            for (lag,) in conn.execute(
                "SELECT extract(epoch FROM started_at - scheduled_at) FROM location_check"
                " WHERE seen IS NOT NULL AND scheduled_at >= %s AND scheduled_at < %s",
                (start, end),
            )
        ]
        absent = _count(
            conn,
            "SELECT count(*) FROM location_check WHERE seen IS NULL AND scheduled_at >= %s AND scheduled_at < %s",
            (start, end),
        )
        latencies = [
            lag
            for (lag,) in conn.execute(
                "SELECT extract(epoch FROM checked_at - scheduled_at) FROM uptime_check"
                " WHERE scheduled_at >= %s AND scheduled_at < %s",
                (start, end),
            )
        ]
        made = _count(conn, "SELECT count(*) FROM location_check WHERE seen IS NOT NULL")
        crowded = _count(
            conn,
            "SELECT count(*) FROM (SELECT 1 FROM location_check GROUP BY component_id, scheduled_at"
            " HAVING count(*) > %s) x",
            (len(locations),),
        )
        waiting = _count(conn, "SELECT count(*) FROM location_slot")
    expected = expected_slots(args.components, args.interval, first, start, end)
    print(
        f"locations         : {', '.join(locations)} (majority quorum), each {args.location_processes} process(es)"
        f" x {args.location_threads} threads"
    )
    print(
        f"location checks/s : {len(lags) / window:8.1f}  (expected {expected * len(locations) / window:.1f};"
        f" {absent} recorded absent)"
    )
    print(f"verdicts/s        : {len(latencies) / window:8.1f}  (expected {expected / window:.1f})")
    print(f"location lag      : {_spread(lags)}  (its request's start minus the slot)")
    print(f"verdict latency   : {_spread(latencies)}  (the verdict's row minus the slot)")
    doubled = "not counted (not our target)" if beyond is None else str(beyond - made)
    print(
        f"missed, doubled   : {expected - len(latencies)}, {doubled} requests beyond the location checks;"
        f" {crowded} slots with more rows than locations; {waiting} slots still waiting at the end"
    )
    return len(lags)


def _count(conn: psycopg.Connection, query: str, params: tuple = ()) -> int:
    row = conn.execute(query, params).fetchone()
    return row[0] if row else 0


def _spread(values: list[float]) -> str:
    p50, p99, most = percentile(values, 0.5), percentile(values, 0.99), max(values, default=float("nan"))
    return f"p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {most * 1000:.0f} ms"


def cpu(after: tuple[float, ...], before: tuple[float, ...], checks: int) -> str:
    """The CPU per check of the workers, the scheduler, RabbitMQ and PostgreSQL, and the machine's."""
    workers, scheduler, rabbit, postgres, machine = (
        (a - b) / max(1, checks) * 1000 for a, b in zip(after, before, strict=True)
    )
    return (
        f"{workers + scheduler + rabbit + postgres:.2f} ms (workers {workers:.2f}, scheduler {scheduler:.2f},"
        f" RabbitMQ {rabbit:.2f}, PostgreSQL {postgres:.2f}); whole machine {machine:.2f} ms"
    )


def report(
    args: argparse.Namespace,
    env: dict[str, str],
    counts: dict[str, int],
    times: tuple[datetime, datetime, datetime],
    served: dict[str, int | None],
) -> int:
    """Print each kind's checks/s, start lag, missed and duplicated checks in the window; returns
    the checks of every kind in it. ``times``: the first slots, the window's start and end;
    ``served``: what each kind's target answered beyond its baseline (None: not counted)."""
    first, start, end = times
    with psycopg.connect(ENV["PULSE_DATABASE_URL"]) as conn:
        rows = conn.execute(
            "SELECT c.kind, extract(epoch FROM u.started_at - u.scheduled_at), u.success FROM uptime_check u"
            " JOIN component c ON c.id = u.component_id WHERE u.scheduled_at >= %s AND u.scheduled_at < %s",
            (start, end),
        ).fetchall()
        recorded = dict(
            conn.execute(
                "SELECT c.kind, count(*) FROM uptime_check u JOIN component c ON c.id = u.component_id GROUP BY 1"
            ).fetchall()
        )
    window = (end - start).total_seconds()
    broker = f"{args.cluster}-node cluster" if args.cluster else "one node"
    shown = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
    print(
        f"\n{shown} components every {args.interval} s for {args.minutes:g} min, "
        f"{args.processes} worker processes x {args.threads} threads, RabbitMQ {broker}, "
        f"{env.get('PULSE_QUEUE_TYPE', 'classic')} queues, workers log at {env['PULSE_LOG_LEVEL']}"
    )
    for kind, count in counts.items():
        if not count:
            continue
        lags = [lag for of, lag, _ in rows if of == kind]
        failed = sum(1 for of, _, success in rows if of == kind and not success)
        expected = expected_slots(count, args.interval, first, start, end)
        p50, p99, most = (percentile(lags, 0.5), percentile(lags, 0.99), max(lags, default=float("nan")))
        # Every check makes one request (connection, query) and records one row: beyond the rows are duplicates.
        beyond = served.get(kind)
        duplicated = "not counted (not our target)" if beyond is None else beyond - recorded.get(kind, 0)
        if kind == "http" and args.locations:
            duplicated = "counted below, against the location checks"
        print(f"{kind:4} checks/s     : {len(lags) / window:8.1f}  (expected {expected / window:.1f}; {failed} failed)")
        print(f"{kind:4} start lag    : p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {most * 1000:.0f} ms")
        print(f"{kind:4} missed, dup. : {expected - len(lags)}, {duplicated}")
    return len(rows)


if __name__ == "__main__":
    main()
