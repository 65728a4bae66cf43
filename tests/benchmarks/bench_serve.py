"""The inbound service's "hello" rate against the standard library's, in one run.

    python tests/benchmarks/bench_serve.py [--seconds 5] [--clients 8]

Each server runs alone in a process of its own and answers ``GET /hello`` with ``hello``:
the baseline is ``wsgiref`` with a thread per connection (how `pulse oncall ack-server` was served);
the other is `pulse serve`'s `Service` with that one route. Clients are threads of this process on
keep-alive connections (``requests.Session``), so the figure includes the client's own cost; the
ratio is what survives a noisy machine. No database is touched.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator

import requests


def wsgiref_server(port: int) -> None:
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    class Threading(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    def app(environ, start_response):  # type: ignore[no-untyped-def]
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
        return [b"hello"]

    make_server("127.0.0.1", port, app, server_class=Threading, handler_class=Quiet).serve_forever()


def pulse_server(port: int) -> None:
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from pulse.inbound.server import Service

    async def hello(request):  # type: ignore[no-untyped-def]
        return PlainTextResponse("hello")

    served = [Route("/hello", hello)]
    Service(
        "127.0.0.1",
        port,
        served=served,
        metrics_port=None,
        request_deadline_s=10,
        max_connections=64,
        max_per_address=64,
    ).run()


def rate(port: int, seconds: float, clients: int) -> float:
    """Requests answered per second by the server on ``port``."""
    url = f"http://127.0.0.1:{port}/hello"
    stop = time.monotonic() + seconds
    counts = [0] * clients

    def client(number: int) -> None:
        with requests.Session() as session:
            while time.monotonic() < stop:
                assert session.get(url, timeout=5).text == "hello"
                counts[number] += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / seconds


@contextlib.contextmanager
def serving(target, port: int) -> Iterator[int]:  # type: ignore[no-untyped-def]
    """``target(port)`` serving in a process of its own until the block ends (once it answers); the
    block is given its pid."""
    process = multiprocessing.Process(target=target, args=(port,), daemon=True)
    process.start()
    deadline = time.monotonic() + 10
    while True:
        try:
            requests.get(f"http://127.0.0.1:{port}/hello", timeout=1)
            break
        except requests.ConnectionError:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
    try:
        yield process.pid
    finally:
        process.terminate()
        process.join()


def measure(target, port: int, seconds: float, clients: int) -> float:  # type: ignore[no-untyped-def]
    with serving(target, port):
        return rate(port, seconds, clients)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    baseline = measure(wsgiref_server, 18431, args.seconds, args.clients)
    pulse = measure(pulse_server, 18432, args.seconds, args.clients)
    print(f"cores: {os.cpu_count()}, clients: {args.clients} threads, {args.seconds:g} s each")
    print(f"wsgiref (baseline):   {baseline:8.0f} hello/s")
    print(f"pulse serve (uvicorn): {pulse:7.0f} hello/s   ratio {pulse / baseline:.2f}")


if __name__ == "__main__":
    main()
