"""Heartbeat pings and alert events through `pulse serve` at the highest rate it sustains, beside
its bare ``hello`` rate, in one run.

    python tests/benchmarks/bench_inbound.py [--step-seconds 10] [--start 100] [--factor 1.25]
        [--connections 32] [--monitors 5000] [--sources 500]

It migrates its own database and vhost (pulse_bench_inbound) and applies, with `pulse apply`, an
organization of ``--monitors`` heartbeat monitors and ``--sources`` events-API sources (so that no
token comes near its rate: at 5,000 requests a second, a monitor is pinged once a second and a
source sends 10 events a second, the limits), then offers each load in steps:

- ``hello``: `bench_serve`'s bare Starlette route on `pulse serve`'s `Service`, no database (the
  baseline);
- ``pings``: ``GET /ping/<token>``, each to the next monitor;
- ``events``: ``POST /alerts/events``, a trigger of one of 2 dedup keys of the next source (the first
  of each opens an alert and pages; the others repeat it, as Alertmanager does).

`pulse serve` runs as it is run (`python -m pulse.cli serve`, its INFO line per request written, to
nowhere). A step offers a rate for ``--step-seconds`` in an open loop: each request is due at its own
time whether or not the earlier ones were answered, on up to ``--connections`` kept-alive
connections, and its latency counts from when it was due (a request waiting for a free connection
waits in the latency, so a server that falls behind shows it). A step passes with p99 <= 50 ms,
every request answered 2xx, and none lost: the rows the step added (``heartbeat_ping``,
``alert_event``) are as many as its 2xx answers.

The kinds are stepped side by side, so that a busy spell of the machine falls on all of them
alike: at each rate, from ``--start`` up by ``--factor``, each kind still passing runs one step
(a failed step runs once more, since one stall of a shared machine fails a p99; both attempts
are printed), until every kind has failed; then each kind runs once more halfway between the last
rate it passed and the first it failed. Before the first rate, each kind runs `WARM_UP_S` seconds
uncounted (connections, threads, caches).

This is done twice. First with the workers stopped, so that `pulse serve` and PostgreSQL have the
machine as the hello server has: the service's ceiling. Then the workers
(`dramatiq pulse.actors -Q uptime oncall`, 1 process x 4 threads, and `periodiq`) start and apply
what the first round left (the time they take is printed), and the kinds are stepped again with
them applying beside (the hello server too, beside the idle workers): what the machine sustains. A
step then also needs the workers to keep up, no more than `LAG_S` seconds of its rate left
unapplied when it ends; they apply all of it before the next step, and nothing is left unapplied
at the end.

The client is this process (asyncio), on the same cores: its cost is in every figure, the hello
rate's included, so the ratios are what survives a noisy machine. Each step also prints the CPU a
request cost the server, the PostgreSQL backends of the benchmark's database, the workers when they
run, and the client.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.benchmarks.bench_serve import pulse_server, serving
from tests.benchmarks.measure import (
    HOST,
    ROOT,
    backends,
    cpu_seconds,
    drop_vhost,
    environment,
    percentile,
    reset,
    start_pulse,
    stop_pulse,
    tree,
)
from tests.support.worker import free_port

NAME = "pulse_bench_inbound"
ENV = environment(NAME)
P99_MS = 50.0
KEYS = 2  # dedup keys per source
WARM_UP_S = 3  # seconds offered at the first rate before each kind's steps, not counted
LAG_S = 2.0  # the workers keep up when no more than this many seconds of the rate wait unapplied
EVENT = (
    '{"event_action": "trigger", "dedup_key": "%s", "payload": '
    '{"summary": "Disk 92%% on %s", "source": "%s", "severity": "critical"}}'
)

#: A request's bytes for its number.
Requests = Callable[[int], bytes]


@dataclass
class Kind:
    """A load offered in steps.

    Parameters:
      port: the server's.
      make: the bytes of each request.
      cpu: groups of processes whose CPU a step reads (each found anew before the step).
      counted: the table whose rows a step counts (None: nothing is written).
      workers: a connection to see what the workers left unapplied, when they run.
    """

    port: int
    make: Requests
    cpu: dict[str, Callable[[], list[int]]]
    counted: Counted | None = None
    workers: psycopg.Connection | None = None
    numbers: Iterator[int] = field(default_factory=lambda: itertools.count(step=1_000_000))  # each step's apart


def monitor_token(number: int) -> str:
    return f"m{number:06d}".ljust(40, "p")


def source_token(number: int) -> str:
    return f"s{number:06d}".ljust(40, "e")


def configuration(monitors: int, sources: int) -> str:
    """The organization: one person paged by email, a policy, the sources and the monitors."""
    lines = [
        "organizations:",
        "  - slug: bench",
        "    name: Bench",
        "    people: [{key: oncall, name: On call, email: oncall@bench.example}]",
        "    escalation_policies:",
        "      - {key: bench, levels: [{targets: [{person: oncall}], wait: 30m}], contact: [email]}",
        "    alert_sources:",
        *(
            f'      - {{key: s{i}, name: S{i}, kind: events, token: "{source_token(i)}", escalation_policy: bench}}'
            for i in range(sources)
        ),
        "    components:",
        *(
            f'      - {{key: m{i}, name: M{i}, type: heartbeat, period: 1h, grace: 1h, token: "{monitor_token(i)}"}}'
            for i in range(monitors)
        ),
    ]
    return "\n".join(lines) + "\n"


def hello(number: int) -> bytes:
    return b"GET /hello HTTP/1.1\r\nHost: bench\r\n\r\n"


def pings(monitors: int) -> Requests:
    def ping(number: int) -> bytes:
        return f"GET /ping/{monitor_token(number % monitors)} HTTP/1.1\r\nHost: bench\r\n\r\n".encode()

    return ping


def events(sources: int) -> Requests:
    def event(number: int) -> bytes:
        source = number % sources
        body = EVENT % (f"k{number // sources % KEYS}", f"db-{source}", f"db-{source}")
        return (
            f"POST /alerts/events HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {source_token(source)}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}"
        ).encode()

    return event


@dataclass
class Step:
    rate: float  # offered, requests a second
    latencies: list[float]  # seconds from when each request was due to its whole answer
    statuses: dict[int, int]  # status (0: no answer) -> how many
    seconds: float  # from the first request due to the last answer
    rows: int | None = None  # rows the step added, when they are counted
    unapplied: int | None = None  # pings and events left unapplied when it ended, the workers running
    drained_s: float = 0.0  # how long the workers took to apply those
    cpu_ms: dict[str, float] = field(default_factory=dict)  # CPU per request answered, by group of processes

    @property
    def answered_2xx(self) -> int:
        return sum(n for status, n in self.statuses.items() if 200 <= status < 300)

    @property
    def p99_ms(self) -> float:
        return percentile(self.latencies, 0.99) * 1000

    @property
    def lost(self) -> int:
        return 0 if self.rows is None else self.answered_2xx - self.rows

    @property
    def kept_up(self) -> bool:
        """Whether the workers, when running, were within `LAG_S` of the offered rate at the end."""
        return self.unapplied is None or self.unapplied <= LAG_S * self.rate

    @property
    def passed(self) -> bool:
        return (
            self.p99_ms <= P99_MS
            and self.answered_2xx == len(self.latencies)
            and (self.rows is None or self.rows == self.answered_2xx)
            and self.kept_up
        )

    def line(self, kind: str) -> str:
        counted = "" if self.rows is None else f", rows {self.rows} (lost {self.lost})"
        if self.unapplied is not None:
            counted += f", {self.unapplied} unapplied at the end, applied {self.drained_s:.1f} s later"
        cpu = ", ".join(f"{group} {ms:.2f}" for group, ms in self.cpu_ms.items())
        others = {s: n for s, n in self.statuses.items() if not 200 <= s < 300}
        return (
            f"  {kind:7} {self.rate:7.0f}/s offered: {len(self.latencies) / self.seconds:7.0f}/s answered, "
            f"p50 {percentile(self.latencies, 0.5) * 1000:6.1f} p99 {self.p99_ms:7.1f} "
            f"max {max(self.latencies) * 1000:7.1f} ms"
            f"{counted}{', not 2xx ' + str(others) if others else ''}; CPU ms a request: {cpu}"
            f"  {'pass' if self.passed else 'FAIL'}"
        )


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes) -> tuple[int, bool]:
    """Send one request, read its answer: (status, whether the server keeps the connection)."""
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
    await reader.readexactly(int(headers.get("content-length", "0")))
    return int(lines[0].split()[1]), headers.get("connection") != "close"


async def _offer(port: int, rate: float, seconds: float, make: Requests, first: int, connections: int) -> Step:
    total = int(rate * seconds)
    due: asyncio.Queue[tuple[float, int] | None] = asyncio.Queue()
    latencies: list[float] = []
    statuses: dict[int, int] = {}

    async def connection() -> None:
        reader = writer = None
        while (item := await due.get()) is not None:
            when, number = item
            status = 0
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                assert reader is not None
                status, keep = await asyncio.wait_for(_exchange(reader, writer, make(number)), 10)
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
                keep = False
            latencies.append(time.perf_counter() - when)
            statuses[status] = statuses.get(status, 0) + 1
            if not keep and writer is not None:
                writer.close()
                reader = writer = None
        if writer is not None:
            writer.close()

    clients = [asyncio.create_task(connection()) for _ in range(connections)]
    started = time.perf_counter()
    for n in range(total):
        when = started + n / rate
        wait = when - time.perf_counter()
        if wait > 0.0005:
            await asyncio.sleep(wait)
        due.put_nowait((when, first + n))
    for _ in clients:
        due.put_nowait(None)
    await asyncio.gather(*clients)
    return Step(rate, latencies, statuses, time.perf_counter() - started)


def offer(port: int, rate: float, seconds: float, make: Requests, first: int, connections: int) -> Step:
    """Offer ``rate`` requests a second for ``seconds`` seconds, numbered from ``first``."""
    return asyncio.run(_offer(port, rate, seconds, make, first, connections))


class Counted:
    """The rows a kind's requests add, counted by id: what was there before a step, what is after."""

    def __init__(self, conn: psycopg.Connection, table: str) -> None:
        self.conn, self.table = conn, table

    def last(self) -> int:
        return self.conn.execute(f"SELECT coalesce(max(id), 0) FROM {self.table}").fetchone()[0]

    def since(self, last: int) -> int:
        return self.conn.execute(f"SELECT count(*) FROM {self.table} WHERE id > %s", (last,)).fetchone()[0]


def run(name: str, kind: Kind, rate: float, args: argparse.Namespace) -> Step:
    """One step of ``kind`` at ``rate``, printed."""
    before = kind.counted.last() if kind.counted else 0
    processes = {group: find() for group, find in kind.cpu.items()}
    cpu = {group: cpu_seconds(found) for group, found in processes.items()}
    client = time.process_time()
    step = offer(kind.port, rate, args.step_seconds, kind.make, next(kind.numbers), args.connections)
    step.cpu_ms = {group: cpu_seconds(found) - cpu[group] for group, found in processes.items()}
    step.cpu_ms["client"] = time.process_time() - client
    step.cpu_ms = {group: seconds * 1000 / len(step.latencies) for group, seconds in step.cpu_ms.items()}
    if kind.counted:
        step.rows = kind.counted.since(before)
    if kind.workers is not None:
        step.unapplied = unapplied(kind.workers)
        step.drained_s = drain(kind.workers)
    print(step.line(name), flush=True)
    time.sleep(1)  # what is still in flight settles
    return step


def attempt(name: str, kind: Kind, rate: float, args: argparse.Namespace) -> Step:
    """A step, and once more if it failed."""
    step = run(name, kind, rate, args)
    return step if step.passed else run(name, kind, rate, args)


def search(kinds: dict[str, Kind], args: argparse.Namespace) -> dict[str, Step | None]:
    """Each kind's best step that passed (None: not even the first), stepped side by side."""
    for kind in kinds.values():
        offer(kind.port, args.start, WARM_UP_S, kind.make, next(kind.numbers), args.connections)
        if kind.workers is not None:
            drain(kind.workers)
    best: dict[str, Step | None] = dict.fromkeys(kinds)
    failed: dict[str, float] = {}
    rate = args.start
    while len(failed) < len(kinds):
        for name, kind in kinds.items():
            if name not in failed:
                step = attempt(name, kind, rate, args)
                if step.passed:
                    best[name] = step
                else:
                    failed[name] = rate
        rate *= args.factor
    for name, kind in kinds.items():
        passed = best[name]
        if passed is not None:
            middle = attempt(name, kind, (passed.rate * failed[name]) ** 0.5, args)
            if middle.passed:
                best[name] = middle
    return best


def unapplied(conn: psycopg.Connection) -> int:
    return conn.execute(
        "SELECT (SELECT count(*) FROM heartbeat_ping WHERE NOT applied)"
        " + (SELECT count(*) FROM alert_event WHERE NOT applied)"
    ).fetchone()[0]


def drain(conn: psycopg.Connection, limit_s: float = 600) -> float:
    """Wait until the workers applied every ping and event; how long it took."""
    started = time.monotonic()
    while unapplied(conn):
        assert time.monotonic() - started < limit_s, f"{unapplied(conn)} still unapplied after {limit_s:g} s"
        time.sleep(0.2)
    return time.monotonic() - started


def report(title: str, best: dict[str, Step | None]) -> None:
    print(title)
    base = best["hello"]
    for name, step in best.items():
        if step is None:
            print(f"  {name:7} none: its first step failed")
            continue
        ratio = "" if base is None or name == "hello" else f", {step.rate / base.rate:.2f} x hello"
        cpu = ", ".join(f"{group} {ms:.2f}" for group, ms in step.cpu_ms.items())
        print(f"  {name:7} {step.rate:6.0f}/s (p99 {step.p99_ms:.1f} ms){ratio}; CPU ms a request: {cpu}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step-seconds", type=float, default=10)
    parser.add_argument("--start", type=float, default=100)
    parser.add_argument("--factor", type=float, default=1.25)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--monitors", type=int, default=5000)
    parser.add_argument("--sources", type=int, default=500)
    args = parser.parse_args()

    reset(NAME)
    env = {**os.environ, **ENV}
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as file:
        file.write(configuration(args.monitors, args.sources))
        file.flush()
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "pulse.cli", "apply", "-f", file.name], env=env, cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        print(f"`pulse apply`: {args.monitors} monitors, {args.sources} sources in {time.monotonic() - started:.1f} s")
    print(
        f"cores: {os.cpu_count()}, {args.connections} connections, steps of {args.step_seconds:g} s,"
        f" p99 <= {P99_MS:g} ms"
    )

    port = free_port()
    log = tempfile.TemporaryFile("w+")  # its log: a line per request, shown only if it fails to start
    serve = subprocess.Popen(
        [sys.executable, "-m", "pulse.cli", "serve", "--port", str(port)],
        env={**env, "PULSE_LOG_LEVEL": "INFO", "PULSE_SERVE_METRICS_PORT": str(free_port())},
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    workers = scheduler = None
    try:
        if serve.stdout is None or not serve.stdout.readline().startswith("serving on"):
            log.seek(0)
            sys.exit(f"pulse serve did not start:\n{log.read()[-3000:]}")
        with (
            serving(pulse_server, hello_port := free_port()) as hello_pid,
            psycopg.connect(ENV["PULSE_DATABASE_URL"], autocommit=True) as conn,
        ):
            own = conn.execute("SELECT pg_backend_pid()").fetchone()[0]  # the benchmark's counting, not counted
            database = backends(NAME)
            served = {"server": lambda: [serve.pid], "PostgreSQL": lambda: [p for p in database() if p != own]}
            kinds = {
                "hello": Kind(hello_port, hello, {"server": lambda: [hello_pid]}),
                "pings": Kind(port, pings(args.monitors), served, Counted(conn, "heartbeat_ping")),
                "events": Kind(port, events(args.sources), served, Counted(conn, "alert_event")),
            }
            print("the service alone (no worker running):")
            alone = search(kinds, args)

            waiting = unapplied(conn)
            started = time.monotonic()
            workers, scheduler = start_pulse(env, processes=1, threads=4, queues=("uptime", "oncall"))
            drain(conn)
            print(f"the workers applied those {waiting} in {time.monotonic() - started:.1f} s (their start included)")
            running = workers, scheduler
            for kind in kinds.values():
                kind.cpu = {**kind.cpu, "workers": lambda: [pid for p in running for pid in tree(p.pid)]}
                if kind.counted:
                    kind.workers = conn
            print(f"the workers applying beside (keeping up: at most {LAG_S:g} s of the rate left at a step's end):")
            beside = search(kinds, args)
            left = unapplied(conn)
    finally:
        serve.terminate()
        serve.wait(30)
        log.close()
        if workers is not None and scheduler is not None:
            stop_pulse(workers, scheduler)
        drop_vhost(NAME)

    print(
        f"\nthe highest rate with p99 <= {P99_MS:g} ms, all answered 2xx, none lost ({os.cpu_count()} cores, {HOST}):"
    )
    report("the service alone:", alone)
    report(f"the workers applying beside ({left} left unapplied at the end):", beside)


if __name__ == "__main__":
    main()
