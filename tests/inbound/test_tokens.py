"""A write route made with `token_route`, defined here, on the real service: only a known token
writes, each token has its own rate, a body over the bound is refused, a write the database cannot
take is answered 503 and the next reconnects, and the log and the telemetry name the route, never the
token."""

import dataclasses
import logging
import re
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from pulse.db import db, setup_database
from pulse.inbound.bounds import RefusedError
from pulse.inbound.limits import TokenBuckets
from pulse.inbound.tokens import Arrival, digest, ok, token_route
from tests.conftest import POOL
from tests.support.models import Attempt
from tests.support.serve import running

KNOWN = "k" * 32
OTHER = "o" * 32


@pytest.fixture
def service(settings):
    """The service with two dummy routes writing to ``service.written``: the token in the path, or in
    the header; 2 requests at once per token, then one every 100 s."""
    stored = {digest(KNOWN): "job"}  # what a domain keeps: the digest, never the token
    written: list[Arrival] = []

    def write(arrival):
        row = stored.get(digest(arrival.token))
        if row is None:
            return None
        if arrival.body == b"refused":
            raise RefusedError(400, "a body the domain refuses")
        written.append(arrival)
        return ok()

    def known(token):
        return digest(token) in stored

    buckets = TokenBuckets(rate_per_s=0.01, burst=2)
    served = [
        token_route("/t/{token}", write, known, methods=["POST"], max_body_bytes=100, buckets=buckets),
        token_route("/t/{token}/{kind}", write, known, methods=["GET", "POST"], max_body_bytes=100, buckets=buckets),
        token_route("/hook", write, known, methods=["POST"], max_body_bytes=100, buckets=buckets),
    ]
    with running(settings, served=served) as running_service:
        running_service.written = written
        yield running_service


def url(service, path):
    return f"http://127.0.0.1:{service.port}{path}"


def test_a_known_token_writes_and_the_log_names_the_route(service, caplog):
    caplog.set_level(logging.INFO)
    answered = requests.post(url(service, f"/t/{KNOWN}/fail"), data=b"exit 3", timeout=5)

    assert (answered.status_code, answered.text) == (200, "OK")
    [arrival] = service.written
    assert (arrival.token, arrival.params, arrival.method, arrival.body) == (KNOWN, {"kind": "fail"}, "POST", b"exit 3")
    [line] = [r for r in caplog.records if r.name == "pulse.inbound"]
    assert (line.getMessage(), line.route, line.status, line.method) == (
        "POST /t/{token}/{kind} 200",
        "/t/{token}/{kind}",
        200,
        "POST",
    )
    assert line.duration_ms >= 0
    assert KNOWN not in caplog.text


def test_the_token_may_come_in_a_header(service):
    assert requests.post(url(service, "/hook"), headers={"X-Pulse-Token": KNOWN}, timeout=5).status_code == 200
    assert requests.post(url(service, "/hook"), headers={"Authorization": f"Bearer {KNOWN}"}, timeout=5).ok
    assert (
        requests.post(url(service, "/hook"), headers={"Authorization": f"Basic {KNOWN}"}, timeout=5).status_code == 404
    )
    assert requests.post(url(service, "/hook"), timeout=5).status_code == 404
    assert len(service.written) == 2


@pytest.mark.parametrize(
    ("path", "reason"),
    [(f"/t/{OTHER}", "no such token"), ("/t/short", "not a token"), ("/t/" + "k" * 129, "not a token")],
)
def test_an_unknown_or_malformed_token_writes_nothing(service, caplog, path, reason):
    caplog.set_level(logging.INFO)
    answered = requests.post(url(service, path), data=b"x", timeout=5)

    assert answered.status_code == 404 and service.written == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        f"Refused a request from 127.0.0.1 (POST /t/{{token}}): answered 404: {reason}."
    ]
    assert OTHER not in caplog.text


def test_each_token_has_its_own_rate(service):
    assert [requests.post(url(service, f"/t/{KNOWN}"), timeout=5).status_code for _ in range(3)] == [200, 200, 429]
    refused = requests.post(url(service, f"/t/{KNOWN}"), timeout=5)
    assert refused.status_code == 429 and 1 <= int(refused.headers["Retry-After"]) <= 100
    assert len(service.written) == 2
    assert requests.post(url(service, f"/t/{OTHER}"), timeout=5).status_code == 404  # a budget of its own


def test_an_oversized_body_is_refused_and_the_service_still_answers(service):
    refused = requests.post(url(service, f"/t/{KNOWN}"), data=b"x" * 101, timeout=5)

    assert refused.status_code == 413 and service.written == []
    assert requests.post(url(service, f"/t/{KNOWN}"), data=b"x" * 100, timeout=5).status_code == 200
    assert len(service.written) == 1


@pytest.mark.parametrize(("body", "refused"), [(b"x" * 101, 413), (b"refused", 400)])
def test_a_token_is_judged_before_its_body(service, body, refused):
    assert requests.post(url(service, f"/t/{OTHER}"), data=body, timeout=5).status_code == 404
    assert (
        requests.post(url(service, "/hook"), data=body, headers={"X-Pulse-Token": OTHER}, timeout=5).status_code == 404
    )
    assert requests.post(url(service, f"/t/{KNOWN}"), data=body, timeout=5).status_code == refused
    assert service.written == []


def test_the_telemetry_counts_by_route_and_status_on_its_own_port(service):
    requests.post(url(service, f"/t/{KNOWN}"), timeout=5)
    requests.post(url(service, f"/t/{OTHER}"), timeout=5)
    assert requests.get(url(service, "/metrics"), timeout=5).status_code == 404  # not on the public port

    scraped = requests.get(f"http://127.0.0.1:{service.metrics_port}/metrics", timeout=5).text
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(scraped)
        for s in family.samples
    }
    assert samples[("inbound_requests_total", (("code", "200"), ("route", "/t/{token}")))] == 1
    assert samples[("inbound_requests_total", (("code", "404"), ("route", "/t/{token}")))] == 1
    assert samples[("inbound_request_seconds_count", (("route", "/t/{token}"),))] == 2
    assert KNOWN not in scraped and OTHER not in scraped


def test_a_bucket_refills_at_its_rate_and_forgets_the_least_recent():
    now = [0.0]
    buckets = TokenBuckets(rate_per_s=0.5, burst=2, size=2, clock=lambda: now[0])
    assert [buckets.take("a"), buckets.take("a"), buckets.take("a")] == [0, 0, 2.0]
    now[0] = 1.0
    assert buckets.take("a") == 1.0  # half a token back: one second to go
    now[0] = 2.0
    assert buckets.take("a") == 0
    buckets.take("b")
    buckets.take("c")  # "a" is dropped: at most 2 kept
    assert buckets.take("a") == 0


@pytest.fixture
def recording(settings):
    """The service with a route that records in the database as the domains' do (``test_attempt``)."""

    def write(arrival):
        with db.atomic():
            db.execute_sql(
                "INSERT INTO test_attempt (key, message_id, number, pid, at) VALUES (%s, '-', 1, 0, now())",
                (arrival.body.decode(),),
            )
        return ok()

    served = [
        token_route(
            "/t/{token}",
            write,
            lambda token: True,
            methods=["POST"],
            max_body_bytes=100,
            buckets=TokenBuckets(rate_per_s=100, burst=100),
        )
    ]
    Attempt.delete().execute()
    with running(settings, served=served) as running_service:
        yield running_service
    Attempt.delete().execute()


def warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_write_while_the_database_is_down_is_answered_503_in_one_warning(recording, settings, caplog, capfd):
    caplog.set_level(logging.INFO)
    setup_database(dataclasses.replace(settings, database_url="postgresql://postgres@127.0.0.1:1/down"))
    try:
        answered = requests.post(url(recording, f"/t/{KNOWN}"), data=b"lost", timeout=10)
    finally:
        setup_database(settings, max_connections=POOL)

    assert (answered.status_code, answered.headers["Retry-After"]) == (503, "5")
    assert answered.text == "The database is unavailable: try again later.\n"  # the host and port stay in the log
    assert warnings(caplog) == [
        "Refused a request from 127.0.0.1 (POST /t/{token}): answered 503: the database is unavailable "
        '(connection failed: connection to server at "127.0.0.1", port 1 failed: Connection refused).'
    ]
    assert "Traceback" not in capfd.readouterr().err and KNOWN not in caplog.text
    assert requests.post(url(recording, f"/t/{KNOWN}"), data=b"kept", timeout=10).status_code == 200
    assert [a.key for a in Attempt.select()] == ["kept"]


def test_connections_the_database_closed_are_dropped_and_the_next_write_reconnects(recording, settings, caplog):
    """As after a PostgreSQL restart: every pooled connection died while idle."""
    assert requests.post(url(recording, f"/t/{KNOWN}"), data=b"before", timeout=10).status_code == 200
    admin = psycopg.conninfo.make_conninfo(settings.database_url)
    with psycopg.connect(admin, autocommit=True) as conn:
        killed = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()[0]
    assert killed >= 1
    if not db.is_closed():  # the test's own connection died too
        db.close()

    answers = [requests.post(url(recording, f"/t/{KNOWN}"), data=b"after", timeout=10) for _ in range(3)]

    assert [a.status_code for a in answers] == [503, 200, 200]  # the dead connections dropped at the first
    assert warnings(caplog) == [
        "Refused a request from 127.0.0.1 (POST /t/{token}): answered 503: the database is unavailable "
        "(terminating connection due to administrator command)."
    ]
    assert sorted(a.key for a in Attempt.select()) == ["after", "after", "before"]


def test_a_connection_over_the_cap_is_answered_503_when_every_connection_runs_a_request(settings, caplog):
    release, started = threading.Event(), threading.Semaphore(0)

    def write(arrival):
        started.release()
        release.wait(10)
        return ok()

    served = [
        token_route(
            "/t/{token}",
            write,
            lambda token: True,
            methods=["POST"],
            max_body_bytes=100,
            buckets=TokenBuckets(rate_per_s=1, burst=5),
        )
    ]
    with running(settings, served=served, max_connections=2) as service, ThreadPoolExecutor(2) as pool:
        running_requests = [pool.submit(requests.post, url(service, f"/t/{KNOWN}"), timeout=10) for _ in range(2)]
        for _ in range(2):
            assert started.acquire(timeout=5)
        try:
            with socket.create_connection(("127.0.0.1", service.port), timeout=5) as third:
                refused = third.recv(4096)  # before it sends: a request left unread would reset the connection
        finally:
            release.set()
        assert [r.result().status_code for r in running_requests] == [200, 200]

    assert refused.startswith(b"HTTP/1.1 503 ") and b"Retry-After: 1\r\n" in refused
    assert warnings(caplog) == [
        "Closed a connection from 127.0.0.1 to stay within the bounds (at most 2 connections, 32 per address): "
        "answered 503 as it opened, every connection running a request. Its client may connect again; the next "
        "closings within 60 s are summed up in one line."
    ]


def test_a_request_sent_whole_just_before_a_burst_of_connections_is_served(settings, caplog):
    """Connections accepted together are made one after the other before any is read: the one to
    close to make room is chosen after the loop read the request that came first, whole (an idle
    kept-alive connection goes first)."""
    hold, held = threading.Event(), threading.Event()

    async def block(request):
        held.set()
        hold.wait(10)  # the loop itself waits: what comes meanwhile is accepted together after
        return PlainTextResponse("held")

    served = [
        token_route(
            "/t/{token}",
            lambda arrival: ok(),
            lambda token: True,
            methods=["POST"],
            max_body_bytes=100,
            buckets=TokenBuckets(rate_per_s=1, burst=5),
        ),
        Route("/block", block),
    ]
    with running(settings, served=served, max_connections=3) as service:
        dripping = socket.create_connection(("127.0.0.1", service.port), timeout=5)
        dripping.sendall(b"GET /t/x HTTP/1.1\r\n")  # arriving, the longest
        blocker = socket.create_connection(("127.0.0.1", service.port), timeout=5)
        blocker.sendall(b"GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
        assert held.wait(5)
        ping = socket.create_connection(("127.0.0.1", service.port), timeout=5)
        body = b"whole"
        ping.sendall(
            f"POST /t/{KNOWN} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        burst = [socket.create_connection(("127.0.0.1", service.port), timeout=5) for _ in range(3)]
        caplog.set_level(logging.INFO)
        hold.set()
        answered = ping.recv(4096)
        held_answer = b""
        while not held_answer.endswith(b"held"):
            held_answer += blocker.recv(4096)
        closed = [c for c in [blocker, dripping, *burst] if closed_by_server(c)]
        for c in (dripping, blocker, ping, *burst):
            c.close()

    assert answered.startswith(b"HTTP/1.1 200 ")
    # The blocker, answered, idle first; then the longest arriving: the burst is still silent.
    assert closed == [blocker, dripping, burst[0]]
    first, summed = warnings(caplog)  # the first at once, the others as the service stops
    assert first.startswith("Closed a connection from 127.0.0.1 to stay within the bounds (at most 3 connections")
    assert first.endswith(": idle between two requests, closed to make room. Its client may connect again; the "
                          "next closings within 60 s are summed up in one line.")  # fmt: skip
    assert re.fullmatch(
        r"Closed 2 more connections in the last \d+ s to stay within the bounds \(at most 3 connections, 32 per "
        r"address\): closed to make room while a request was arriving: 2; the most from 127\.0\.0\.1 \(2\)\. "
        r"Their clients may connect again\.",
        summed,
    )


def closed_by_server(connection):
    """Whether the server closed ``connection`` (within 1 s)."""
    connection.settimeout(1)
    try:
        return connection.recv(4096) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
