"""The API's latency on `pulse serve`: a page of a 2,000-component listing and a walk of all its
pages, beside `pulse serve`'s bare ``hello`` route, in one run.

    python tests/benchmarks/bench_api.py [--components 2000] [--requests 1000] [--walks 20] [--clients 1]

It migrates its own database and vhost (pulse_bench_api) and applies, with `pulse apply`, one
organization of ``--components`` http components (then ``VACUUM ANALYZE component``, as autovacuum
would: without statistics the planner sorts all 2,000 rows for each page, 5 ms), then makes
`TOKENS` tokens with the ``read`` scope, which the requests take in turn, so that no token comes
near its rate limit (10 a second): the limit is not what is measured. The kinds, each on kept-alive
connections (``requests.Session``), ``--clients`` at once, closed loop (a client sends its next
request when the last is answered):

- ``hello``: `bench_serve`'s bare Starlette route on `pulse serve`'s `Service`, no database (the
  baseline);
- ``list``: ``GET /api/v1/components?limit=50``, the first page, answered in full;
- ``walk``: every page of ``GET /api/v1/components?limit=50`` (40 at 2,000 components), following
  ``next_cursor``: each page's latency, and each walk's whole time;
- ``write``: ``POST /api/v1/components``, an http component made in a second organization (so that
  the listing stays the same size), validated, written with its audit row and committed, as
  `pulse.api.writes` does each write; its tokens have the ``write`` scope.

`pulse serve` runs as it is run (`python -m pulse.cli serve`, its INFO line per request written, to
nowhere). The kinds take turns in rounds of `ROUND` requests (a walk per round), so that a busy spell
of the machine falls on all of them alike; each round starts after `WARM_UP` uncounted requests of
each kind. Each kind's CPU per request is printed: the server's process and the PostgreSQL
backends of the benchmark's database (`tests/benchmarks/measure.py`); the client is this process,
on the same cores, and its cost is in every latency, hello's included, so the ratios are what
survives a noisy machine.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.benchmarks.bench_serve import pulse_server, serving
from tests.benchmarks.measure import (
    HOST,
    ROOT,
    Tracked,
    backends,
    cpu_seconds,
    drop_vhost,
    environment,
    percentile,
    reset,
)
from tests.support.worker import free_port

NAME = "pulse_bench_api"
ENV = environment(NAME)
TOKENS = 64  # read tokens, one request each in turn: at 300 requests a second, each sees 5 a second, half its rate
ROUND = 50  # requests of each kind in a round
WARM_UP = 50  # requests of each kind before the first round, not counted
PAGE = 50
MAKE_TOKENS = """
import sys
from pulse.api.tokens import create
from pulse.cli.output import settings
settings()
for n in range(int(sys.argv[1])):
    print(create(sys.argv[2], [sys.argv[3]], name=f"bench {n}")[1])
"""


def configuration(components: int) -> str:
    """One organization of ``components`` http components, checked every minute (never, here: no worker runs)."""
    lines = ["organizations:", "  - slug: bench", "    name: Bench", "    components:"]
    lines += [
        f'      - {{key: c{i:05d}, name: C{i}, url: "https://c{i}.bench.example/health"}}' for i in range(components)
    ]
    lines += ["  - slug: bench-writes", "    name: Bench writes"]  # where the writes make theirs
    return "\n".join(lines) + "\n"


@dataclass
class Kind:
    """One kind of request: ``send`` makes one round's worth on a session, each request with the
    next token ``token()`` gives, and returns each one's latency in seconds; ``cpu`` reads the CPU
    seconds of the processes it costs, by group."""

    send: Callable[[requests.Session, Callable[[], str]], list[float]]
    cpu: dict[str, Callable[[], float]]
    latencies: list[float] = field(default_factory=list)
    walks: list[float] = field(default_factory=list)  # a walk's whole time, for `walk`
    cpu_s: dict[str, float] = field(default_factory=dict)


def timed(session: requests.Session, url: str, token: str, body: dict | None = None) -> tuple[float, dict]:
    """A GET of ``url`` (a POST of ``body``, when given), its latency and its JSON."""
    started = time.perf_counter()
    headers = {"Authorization": f"Bearer {token}"}
    if body is None:
        answered = session.get(url, headers=headers, timeout=30)
    else:
        answered = session.post(url, headers=headers, json=body, timeout=30)
    elapsed = time.perf_counter() - started
    assert answered.status_code == (200 if body is None else 201), answered.text[:200]
    return elapsed, answered.json() if answered.headers["content-type"] == "application/json" else {}


def hello(port: int) -> Callable[[requests.Session, Callable[[], str]], list[float]]:
    def send(session: requests.Session, token: Callable[[], str]) -> list[float]:
        return [timed(session, f"http://127.0.0.1:{port}/hello", token())[0] for _ in range(ROUND)]

    return send


def first_page(port: int) -> Callable[[requests.Session, Callable[[], str]], list[float]]:
    url = f"http://127.0.0.1:{port}/api/v1/components?limit={PAGE}"

    def send(session: requests.Session, token: Callable[[], str]) -> list[float]:
        return [timed(session, url, token())[0] for _ in range(ROUND)]

    return send


def every_page(
    port: int, components: int, walks: list[float]
) -> Callable[[requests.Session, Callable[[], str]], list[float]]:
    base = f"http://127.0.0.1:{port}/api/v1/components?limit={PAGE}"

    def send(session: requests.Session, token: Callable[[], str]) -> list[float]:
        latencies, cursor, keys = [], None, 0
        while True:
            elapsed, page = timed(session, base + (f"&cursor={cursor}" if cursor else ""), token())
            latencies.append(elapsed)
            keys += len(page["components"])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert keys == components, keys
        walks.append(sum(latencies))
        return latencies

    return send


def create(port: int, token: Callable[[], str]) -> Callable[[requests.Session, Callable[[], str]], list[float]]:
    """POSTs of new http components, each with the next of the write tokens ``token()`` gives (not
    the read token the round offers)."""
    url, made = f"http://127.0.0.1:{port}/api/v1/components", itertools.count()

    def send(session: requests.Session, _read: Callable[[], str]) -> list[float]:
        latencies = []
        for _ in range(ROUND):
            n = next(made)
            body = {"key": f"w{n:06d}", "name": f"W{n}", "url": f"https://w{n}.bench.example/health"}
            latencies.append(timed(session, url, token(), body)[0])
        return latencies

    return send


def run(kinds: dict[str, Kind], token: Callable[[], str], rounds: int, clients: int, *, counted: bool) -> None:
    """``rounds`` rounds, each kind in turn, ``clients`` at once; with ``counted``, their latencies and CPU."""
    sessions = [requests.Session() for _ in range(clients)]
    for _ in range(rounds):
        for kind in kinds.values():
            before = {group: read() for group, read in kind.cpu.items()}
            found: list[list[float]] = [[] for _ in range(clients)]

            def client(n: int, kind: Kind = kind, found: list[list[float]] = found) -> None:
                found[n] = kind.send(sessions[n], token)

            threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if counted:
                for n in range(clients):
                    kind.latencies += found[n]
                for group, read in kind.cpu.items():
                    kind.cpu_s[group] = kind.cpu_s.get(group, 0.0) + read() - before[group]
    for session in sessions:
        session.close()


def tokens(env: dict[str, str], organization: str, scope: str) -> Callable[[], str]:
    """`TOKENS` tokens of ``organization`` with ``scope``: each call the next one, in turn."""
    made = subprocess.run([sys.executable, "-c", MAKE_TOKENS, str(TOKENS), organization, scope], env=env, cwd=ROOT,
                          check=True, capture_output=True, text=True)  # fmt: skip
    cycle, lock = itertools.cycle(made.stdout.split()), threading.Lock()

    def token() -> str:
        with lock:
            return next(cycle)

    return token


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--components", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=1000, help="of hello, list and write, counted")
    parser.add_argument("--walks", type=int, default=20, help="walks counted (at most one a round)")
    parser.add_argument("--clients", type=int, default=1)
    args = parser.parse_args()

    reset(NAME)
    env = {**os.environ, **ENV}
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as file:
        file.write(configuration(args.components))
        file.flush()
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "pulse.cli", "apply", "-f", file.name], env=env, cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        print(f"`pulse apply`: {args.components} components in {time.monotonic() - started:.1f} s")
    with psycopg.connect(ENV["PULSE_DATABASE_URL"], autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE component")  # what autovacuum (off on the benchmark machine) does after
    token, write_token = (
        tokens(env, organization, scope) for organization, scope in (("bench", "read"), ("bench-writes", "write"))
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
    try:
        if serve.stdout is None or not serve.stdout.readline().startswith("serving on"):
            log.seek(0)
            sys.exit(f"pulse serve did not start:\n{log.read()[-3000:]}")
        with serving(pulse_server, hello_port := free_port()) as hello_pid:
            postgres = Tracked(backends(NAME))
            served = {"server": lambda: cpu_seconds([serve.pid]), "PostgreSQL": postgres.seconds}
            walks: list[float] = []
            kinds = {
                "hello": Kind(hello(hello_port), {"server": lambda: cpu_seconds([hello_pid])}),
                "list": Kind(first_page(port), served),
                "walk": Kind(every_page(port, args.components, walks), served),
                "write": Kind(create(port, write_token), served),
            }
            rounds = max(-(-args.requests // (ROUND * args.clients)), -(-args.walks // args.clients))
            started = time.monotonic()
            run(kinds, token, -(-WARM_UP // ROUND), args.clients, counted=False)
            walks.clear()
            run(kinds, token, rounds, args.clients, counted=True)
            elapsed = time.monotonic() - started
            postgres.stop()
    finally:
        serve.terminate()
        serve.wait(30)
        log.close()
        drop_vhost(NAME)

    print(f"cores: {os.cpu_count()}, {HOST}, {args.clients} client(s), {rounds} rounds in {elapsed:.0f} s,"
          f" {args.components} components, pages of {PAGE}")  # fmt: skip
    hello_p99 = percentile(kinds["hello"].latencies, 0.99)
    print(f"{'kind':<6} {'requests':>8} {'p50 ms':>8} {'p99 ms':>8} {'÷ hello p99':>11}  CPU per request, ms")
    for name, kind in kinds.items():
        count = len(kind.latencies)
        p50, p99 = percentile(kind.latencies, 0.5) * 1000, percentile(kind.latencies, 0.99) * 1000
        cpu = ", ".join(f"{group} {seconds / count * 1000:.2f}" for group, seconds in kind.cpu_s.items())
        print(f"{name:<6} {count:>8} {p50:>8.1f} {p99:>8.1f} {p99 / 1000 / hello_p99:>11.1f}  {cpu}")
    print(
        f"a walk of {-(-args.components // PAGE)} pages: p50 {percentile(walks, 0.5) * 1000:.0f} ms,"
        f" p99 {percentile(walks, 0.99) * 1000:.0f} ms over {len(walks)} walks"
    )


if __name__ == "__main__":
    main()
