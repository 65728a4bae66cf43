"""`pulse serve`'s connections against hostile clients, on the real service: kept-alive connections
idle between requests make room for others at the cap, one address is capped among its own
connections, the telemetry's connections are apart, a head over the bound is refused however it
arrives, pipelined requests are each answered, and ``X-Forwarded-For`` names the client only from a
trusted proxy.

Clients come from several loopback addresses (127.0.0.0/8 is all loopback): a connection bound to
127.0.1.7 is, to the server, another client's than one from 127.0.0.1."""

import asyncio
import dataclasses
import logging
import re
import select
import socket
import threading

import pytest
import requests
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.parser import text_string_to_metric_families
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from pulse.app import serve as app
from pulse.config import Settings
from pulse.inbound.closings import IDLE, REFUSED, Closings
from tests.support.serve import running
from tests.support.wait import wait_for
from tests.support.worker import free_port

CHEAP = b"GET /cheap HTTP/1.1\r\nHost: x\r\n\r\n"  # no token: anyone may send it


class Routes:
    """The test's routes: ``/cheap``; ``/echo`` keeps each body in ``seen`` and answers it; ``/client``
    answers the client's address as the service sees it; ``/block`` waits in a worker thread for
    ``release`` (``running`` counts those waiting)."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []
        self.release = threading.Event()
        self.running = threading.Semaphore(0)
        self.served = [
            Route("/cheap", self.cheap),
            Route("/echo", self.echo, methods=["POST"]),
            Route("/client", self.client),
            Route("/block", self.block),
        ]

    async def cheap(self, request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def echo(self, request: Request) -> PlainTextResponse:
        body = await request.body()
        self.seen.append(body)
        return PlainTextResponse(body.decode())

    async def client(self, request: Request) -> PlainTextResponse:
        return PlainTextResponse(request.client.host if request.client else "-")

    async def block(self, request: Request) -> PlainTextResponse:
        self.running.release()
        await run_in_threadpool(self.release.wait, 10)
        return PlainTextResponse("released")


@pytest.fixture
def routes():
    routes = Routes()
    yield routes
    routes.release.set()


def connect(port, source="127.0.0.1"):
    return socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))


def answer(connection):
    """One answer read from ``connection`` (its head and its ``Content-Length`` body); b"" when the
    server closed it instead."""
    received = b""
    while b"\r\n\r\n" not in received:
        try:
            chunk = connection.recv(4096)
        except ConnectionResetError:
            return b""
        if not chunk:
            return b""
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)\r\ncontent-length: (\d+)", head).group(1))
    while len(body) < length:
        body += connection.recv(4096)
    return head + b"\r\n\r\n" + body


def exchange(connection, request=CHEAP):
    connection.sendall(request)
    return answer(connection)


def status(answered):
    return int(answered.split()[1]) if answered else None


def until_closed(connection):
    """All the server sends until it closes ``connection``."""
    received = b""
    while chunk := connection.recv(4096):
        received += chunk
    return received


def closings(service):
    """``inbound_connections_closed_total`` by reason, from the telemetry port."""
    scraped = requests.get(f"http://127.0.0.1:{service.metrics_port}/metrics", timeout=5).text
    return {
        s.labels["reason"]: s.value
        for family in text_string_to_metric_families(scraped)
        for s in family.samples
        if s.name == "inbound_connections_closed_total"
    }


def warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


class KeptAlive:
    """``count`` clients, each from an address of its own, each on a kept-alive connection sending a
    cheap request every ``every_s`` seconds, opened again when the server closes it."""

    def __init__(self, port: int, count: int, every_s: float = 1.0) -> None:
        self.port, self.every_s = port, every_s
        self.sources = [f"127.0.1.{n}" for n in range(1, count + 1)]
        self.reopened = 0
        self.answered = 0
        self._stop = threading.Event()
        self._connections = [connect(port, source) for source in self.sources]
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "KeptAlive":
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(10)
        for connection in self._connections:
            connection.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            for i, connection in enumerate(self._connections):
                try:
                    answered = status(exchange(connection))
                except OSError:
                    answered = None
                if answered == 200:
                    self.answered += 1
                else:  # closed to make room: it opens another at once, as an attacker would
                    connection.close()
                    self._connections[i] = connect(self.port, self.sources[i])
                    self.reopened += 1
            select.select(self._connections, [], [], self.every_s)  # woken early when the server closes one


def test_idle_kept_alive_connections_at_the_cap_make_room_for_a_ping(settings, routes, caplog):
    """64 clients that each send a request every second hold every connection, idle between their
    requests: a ping closes the one idle the longest and is answered."""
    with running(settings, served=routes.served) as service, KeptAlive(service.port, 64) as clients:
        wait_for(lambda: clients.answered >= 64, "every kept-alive client answered once")
        pings = []
        for closed in range(10):  # each ping closes a client's connection, opened again before the next
            wait_for(lambda: clients.reopened >= closed, "the client closed last connected again")  # noqa: B023
            pings.append(requests.get(f"http://127.0.0.1:{service.port}/cheap", timeout=5).status_code)
        closed = closings(service)

    assert pings == [200] * 10
    assert closed.get(IDLE, 0) >= 10 and closed.get(REFUSED, 0) == 0
    assert clients.reopened >= 1
    said = warnings(caplog)
    assert said and all("idle between two requests, closed to make room" in line for line in said)
    assert not any("answered 503" in line for line in said)


def test_one_address_is_capped_among_its_own_connections(settings, routes):
    with running(settings, served=routes.served, max_per_address=2) as service:
        first, second, other = (
            connect(service.port, "127.0.0.2"),
            connect(service.port, "127.0.0.2"),
            connect(service.port, "127.0.0.3"),
        )
        assert [status(exchange(c)) for c in (first, second, other)] == [200, 200, 200]  # idle now
        third = connect(service.port, "127.0.0.2")
        assert status(exchange(third)) == 200
        assert answer(first) == b""  # its own idle the longest closed, not the other address's
        assert [status(exchange(c)) for c in (second, other)] == [200, 200]

        for c in (second, third):  # every connection of 127.0.0.2 runs a request
            c.sendall(b"GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
        for _ in range(2):
            assert routes.running.acquire(timeout=5)
        with connect(service.port, "127.0.0.2") as refused, connect(service.port, "127.0.0.4") as elsewhere:
            assert status(answer(refused)) == 503  # answered as it opens, before it sends
            assert status(exchange(elsewhere)) == 200
        routes.release.set()
        assert [status(answer(c)) for c in (second, third)] == [200, 200]
        assert closings(service) == {IDLE: 1, REFUSED: 1}
        for c in (first, second, other, third):
            c.close()


def test_forwarded_for_names_the_client_only_from_a_trusted_proxy(settings, routes):
    forwarded = b"GET /client HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.9\r\n\r\n"
    with running(settings, served=routes.served) as service, connect(service.port) as local:
        assert exchange(local, forwarded).endswith(b"\r\n\r\n127.0.0.1")  # none trusted by default, loopback neither

    with running(settings, served=routes.served, trusted_proxies=["127.0.0.2/32"], max_per_address=1) as service:
        proxy, again, stranger = (connect(service.port, source) for source in ("127.0.0.2", "127.0.0.2", "127.0.0.3"))
        assert exchange(proxy, forwarded).endswith(b"\r\n\r\n203.0.113.9")
        assert exchange(stranger, forwarded).endswith(b"\r\n\r\n127.0.0.3")
        assert exchange(again, forwarded).endswith(b"\r\n\r\n203.0.113.9")  # a proxy is not capped per address
        assert exchange(proxy, forwarded).endswith(b"\r\n\r\n203.0.113.9")  # the first is still open
        for c in (proxy, again, stranger):
            c.close()


def test_the_telemetry_listens_on_loopback_unless_told(settings):
    assert Settings().serve_metrics_host == "127.0.0.1"
    service = app.service(dataclasses.replace(settings, serve_metrics_port=free_port()), host="0.0.0.0", port=0)
    try:
        assert [s.getsockname()[0] for s in service.sockets] == ["0.0.0.0", "127.0.0.1"]
    finally:
        for s in service.sockets:
            s.close()


def test_telemetry_connections_take_no_public_room_and_are_never_closed_for_it(settings, routes):
    with running(settings, served=routes.served, max_connections=2) as service:
        scrape = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
        scrapers = [connect(service.metrics_port) for _ in range(3)]
        assert [status(exchange(c, scrape)) for c in scrapers] == [200] * 3  # kept alive, idle
        public = []
        for _ in range(3):  # one after the other: the third closes the first, idle the longest
            public.append(connect(service.port))
            assert status(exchange(public[-1])) == 200
        assert answer(public[0]) == b""
        assert [status(exchange(c, scrape)) for c in scrapers] == [200] * 3
        assert closings(service) == {IDLE: 1}
        for c in (*scrapers, *public):
            c.close()


def test_a_head_over_16_kib_is_refused_even_in_one_write(settings, routes):
    body = b"x"
    request = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nX-Pad: %s\r\n\r\n" + body
    with running(settings, served=routes.served) as service:
        with connect(service.port) as big:
            big.sendall(request % (b"p" * 63 * 1024))  # one write, read whole at once
            assert until_closed(big).startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
        with connect(service.port) as under:
            assert status(exchange(under, request % (b"p" * 16_000))) == 200
        assert closings(service) == {"head": 1}
    assert routes.seen == [body]


@pytest.mark.parametrize("half_close", [False, True], ids=["kept open", "half-closed"])
def test_pipelined_requests_are_each_answered_in_order(settings, routes, half_close):
    """Two requests in one write; the client may close its side once it has sent them (``nc -N``):
    each request recorded is answered."""
    first = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nfirst"
    second = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecond"
    with running(settings, served=routes.served) as service, connect(service.port) as client:
        client.sendall(first + second)
        if half_close:
            client.shutdown(socket.SHUT_WR)
        received = until_closed(client)

    assert routes.seen == [b"first", b"second"]
    assert received.count(b"HTTP/1.1 200 OK\r\n") == 2
    assert received.index(b"\r\n\r\nfirst") < received.index(b"\r\n\r\nsecond")


def test_a_half_closed_connection_with_a_request_not_whole_is_closed_unanswered(settings, routes):
    with running(settings, served=routes.served) as service, connect(service.port) as client:
        client.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nfir")
        client.shutdown(socket.SHUT_WR)
        assert until_closed(client) == b""
    assert routes.seen == []


def test_closings_are_said_once_then_summed_up_once_an_interval(caplog):
    counter = Counter("closed", "-", ["reason"], registry=CollectorRegistry())
    closings = Closings(counter, deadline_s=2, max_head_bytes=16384, caps="4 connections, 2 per address", every_s=0.2)

    async def flood():
        closings.add(IDLE, "192.0.2.1")
        for _ in range(1000):
            closings.add(REFUSED, "192.0.2.2")
        await asyncio.sleep(0.3)  # the interval's end is the event: the summary is written then
        await asyncio.sleep(0.2)  # a quiet interval: the next one is said at once
        closings.add(IDLE, "192.0.2.3")

    asyncio.run(flood())

    assert warnings(caplog) == [
        "Closed a connection from 192.0.2.1 to stay within the bounds (at most 4 connections, 2 per address): idle "
        "between two requests, closed to make room. Its client may connect again; the next closings within 0.2 s "
        "are summed up in one line.",
        "Closed 1000 more connections in the last 0 s to stay within the bounds (at most 4 connections, 2 per "
        "address): answered 503 as it opened, every connection running a request: 1000; the most from 192.0.2.2 "
        "(1000). Their clients may connect again.",
        "Closed a connection from 192.0.2.3 to stay within the bounds (at most 4 connections, 2 per address): idle "
        "between two requests, closed to make room. Its client may connect again; the next closings within 0.2 s "
        "are summed up in one line.",
    ]
    assert counter.labels(REFUSED)._value.get() == 1000 and counter.labels(IDLE)._value.get() == 2
