"""Drills 19-21: `pulse serve` (a process of its own, as it is run) under faults, while a stream of
heartbeat pings and alert events comes in and real workers apply them.

Each request carries a tag of its own (a ping's body, an event's ``custom_details``), so each row
is matched to its request: "none lost" means every request answered 2xx has its row exactly once,
and, once the workers are done, every ping and event is applied, each alert key opened once and
paged once.

- 19: PostgreSQL restarted: requests meeting the outage are answered 503 with ``Retry-After`` (one
  WARNING line each, never a traceback), never 2xx without a row; the service serves again after it,
  without a restart.
- 20: RabbitMQ stopped and started: every request is answered 2xx (the request path never touches
  RabbitMQ); everything is applied once RabbitMQ is back.
- 21: slow clients dripping their headers on more connections than the cap, and oversized bodies:
  a ping meanwhile is answered within the request deadline and recorded.
"""

import itertools
import json
import re
import select
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass

import pytest
import requests

from pulse import configfile
from pulse.models import AlertEvent, FailedMessage, HeartbeatPing, Notification, OnCallAlert
from tests.sources import bodies
from tests.sources.conftest import ALERTMANAGER_TOKEN, EVENTS_TOKEN, GRAFANA_TOKEN
from tests.sources.conftest import FILE as SOURCES
from tests.support.restarts import rabbitmqctl, restart_postgres
from tests.support.serve import ServeProcess
from tests.support.wait import wait_for

MONITORS = 100
KEYS = 10  # dedup keys the events trigger, each again and again
PER_S = 60  # requests a second: 7 pings to 1 event, 0.5 pings a second per monitor, within the rates
THREADS = 4
OK = (200, 202)


def token(number: int) -> str:
    return f"{number:04d}".ljust(40, "h")


@pytest.fixture
def applied(database, rabbit, monkeypatch):
    """The organization of the sources' tests (an events API source paging carol by SMS), with
    `MONITORS` heartbeat monitors instead of its components."""
    for name, value in (("EVENTS_TOKEN", EVENTS_TOKEN), ("ALERTMANAGER_TOKEN", ALERTMANAGER_TOKEN),
                        ("GRAFANA_TOKEN", GRAFANA_TOKEN)):  # fmt: skip
        monkeypatch.setenv(name, value)
    monitors = "".join(
        f'      - {{key: job{i}, name: Job {i}, type: heartbeat, period: 1h, grace: 1h, token: "{token(i)}"}}\n'
        for i in range(MONITORS)
    )
    configfile.apply(configfile.load(SOURCES[: SOURCES.index("    components:\n")] + "    components:\n" + monitors))


@pytest.fixture
def serve():
    service = ServeProcess()
    yield service.wait_ready()
    assert service.stop() == 0, service.output[-3000:]


@dataclass(frozen=True)
class Answer:
    kind: str  # "ping" or "event"
    tag: str
    status: int | None  # None: no answer at all
    retry_after: str | None


class Stream:
    """Pings (each to the next monitor) and events (triggers of `KEYS` keys in turn), `PER_S` a
    second from `THREADS` threads on kept-alive connections, until `stop`; every answer kept."""

    def __init__(self, serve: ServeProcess) -> None:
        self.serve = serve
        self.answers: list[Answer] = []
        self._numbers = itertools.count()
        self._stop = threading.Event()
        self._started = time.monotonic()
        self._threads = [threading.Thread(target=self._send, daemon=True) for _ in range(THREADS)]
        for thread in self._threads:
            thread.start()

    def _send(self) -> None:
        with requests.Session() as session:
            while not self._stop.is_set():
                number = next(self._numbers)
                time.sleep(max(0.0, self._started + number / PER_S - time.monotonic()))
                kind, tag = ("event" if number % 8 == 7 else "ping"), f"r{number}"
                if kind == "event":
                    url = self.serve.url("/alerts/events")
                    data = bodies.event(key=f"k{number % KEYS}", custom_details={"tag": tag})
                    headers = {"Authorization": f"Bearer {EVENTS_TOKEN}", "Content-Type": "application/json"}
                else:
                    url, data, headers = self.serve.url(f"/ping/{token(number % MONITORS)}"), tag.encode(), {}
                try:
                    answer = session.post(url, data=data, headers=headers, timeout=10)
                except requests.RequestException:
                    self.answers.append(Answer(kind, tag, None, None))
                else:
                    self.answers.append(Answer(kind, tag, answer.status_code, answer.headers.get("Retry-After")))

    def wait_answered(self, count: int, after: int = 0, what: str = "answers") -> int:
        """Wait for ``count`` 2xx answers past the first ``after`` answers; how many answers there are then."""
        wait_for(lambda: sum(a.status in OK for a in self.answers[after:]) >= count, what, timeout=60)
        return len(self.answers)

    def stop(self) -> list[Answer]:
        self._stop.set()
        for thread in self._threads:
            thread.join(15)
        return self.answers


def tags() -> Counter:
    """How many rows each request's tag has, pings and events."""
    pings = Counter(bytes(p.body).decode() for p in HeartbeatPing.select(HeartbeatPing.body))
    return pings + Counter(e.details["custom_details"]["tag"] for e in AlertEvent.select(AlertEvent.details))


def assert_applied_once() -> None:
    """Every ping and event applied; each key's alert opened once and paged once, the page sent."""
    wait_for(
        lambda: (
            not (
                HeartbeatPing.select().where(~HeartbeatPing.applied).exists()
                or AlertEvent.select().where(~AlertEvent.applied).exists()
            )
        ),
        "every ping and event applied",
        timeout=120,
    )
    keys = {e.dedup_key for e in AlertEvent.select(AlertEvent.dedup_key)}
    alerts = list(OnCallAlert.select())
    assert sorted(a.dedup_key for a in alerts) == sorted(keys)  # none opened twice
    wait_for(
        lambda: Notification.select().where(Notification.status == "sent").count() >= len(alerts),
        "every page sent",
        timeout=120,
    )
    assert Counter(n.event_id for n in Notification.select()) == Counter(a.event_id for a in alerts)
    assert FailedMessage.select().count() == 0, [(f.actor_name, f.error_message) for f in FailedMessage.select()]


def log_lines(serve: ServeProcess) -> list[dict]:
    return [json.loads(line) for line in serve.lines if line.startswith("{")]


@pytest.mark.minutes
@pytest.mark.restarts
def test_a_postgres_restart_is_answered_503_and_nothing_answered_2xx_is_lost(
    applied, serve, workers, schedulers, provider_env, vendors
):
    workers("--queues", "uptime", "oncall", "notifications", threads=4, env=provider_env)
    schedulers()
    stream = Stream(serve)
    before = stream.wait_answered(100, what="answers before the restart")
    restart_postgres()
    restarted = len(stream.answers)
    stream.wait_answered(200, after=restarted, what="2xx answers after the restart")
    answers = stream.stop()

    statuses = Counter(a.status for a in answers)
    print(f"answers: {dict(statuses)}")
    assert set(statuses) <= {200, 202, 503}, statuses  # never a 500, never a connection dropped
    unavailable = [a for a in answers if a.status == 503]
    assert unavailable and {a.retry_after for a in unavailable} == {"5"}
    assert all(a.status in OK for a in answers[:before])
    lines = log_lines(serve)
    said = [line for line in lines if line["level"] != "info"]
    assert len(said) == len(unavailable), said
    assert all(
        line["level"] == "warning" and "answered 503: the database is unavailable (" in line["msg"] for line in said
    )
    assert "Traceback" not in serve.output and all(token(i) not in serve.output for i in range(MONITORS))

    rows = tags()
    assert all(rows[a.tag] == 1 for a in answers if a.status in OK)  # never 2xx without its row, nor twice
    assert set(rows) <= {a.tag for a in answers} and max(rows.values()) == 1  # a 503 wrote at most one
    assert_applied_once()
    assert serve.process.poll() is None


@pytest.mark.minutes
@pytest.mark.restarts
def test_a_rabbitmq_restart_changes_no_answer_and_everything_is_applied_once_after(
    applied, serve, workers, schedulers, provider_env, vendors, rabbitmq_started_at_the_end
):
    workers("--queues", "uptime", "oncall", "notifications", threads=4, env=provider_env)
    schedulers()
    stream = Stream(serve)
    stream.wait_answered(100, what="answers before RabbitMQ stops")
    rabbitmqctl("stop_app")
    stopped = len(stream.answers)
    stream.wait_answered(8 * PER_S, after=stopped, what="8 s of answers while RabbitMQ is stopped")
    rabbitmqctl("start_app")
    started = len(stream.answers)
    stream.wait_answered(PER_S, after=started, what="answers after RabbitMQ is back")
    answers = stream.stop()

    assert all(a.status == {"ping": 200, "event": 202}[a.kind] for a in answers), Counter(a.status for a in answers)
    assert [line for line in log_lines(serve) if line["level"] != "info"] == []
    assert tags() == Counter(a.tag for a in answers)  # each request's row, once
    assert_applied_once()


class Slowloris:
    """``connections`` connections, each dripping a request's headers a byte at a time (a byte to
    each every 0.1 s), opened again as soon as the server closes one."""

    HEAD = b"GET /ping/" + token(0).encode() + b" HTTP/1.1\r\nHost: x\r\n" + b"X-Drip: 1\r\n" * 1000

    def __init__(self, port: int, connections: int) -> None:
        self.port, self.connections = port, connections
        self.opened = 0  # connections opened, the first ones included
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drip, daemon=True)

    def __enter__(self) -> "Slowloris":
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _open(self) -> tuple[socket.socket, int]:
        self.opened += 1
        connection = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        connection.setblocking(False)
        return connection, 0

    def _drip(self) -> None:
        held = [self._open() for _ in range(self.connections)]
        while not self._stop.wait(0.1):
            closed = set(select.select([c for c, _ in held], [], [], 0)[0])  # readable: closed (or answered)
            for i, (connection, sent) in enumerate(held):
                try:
                    if connection in closed or connection.send(self.HEAD[sent : sent + 1]) != 1:
                        raise ConnectionError
                    held[i] = (connection, sent + 1)
                except (OSError, ConnectionError):
                    connection.close()
                    held[i] = self._open()
        for connection, _ in held:
            connection.close()


class Oversized:
    """Bodies over their route's bound, one after the other: a ping stating 10 MB, an event of
    600 KB sent whole, and a chunked ping growing past 100,000 bytes; each answer's status kept
    (None when the server closed the connection before all was sent: a reset loses its answer)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.statuses: list[int | None] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._send, daemon=True)

    def __enter__(self) -> "Oversized":
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _send(self) -> None:
        event = bodies.event(custom_details={"log": "x" * 600_000})
        requests_ = [
            f"POST /ping/{token(MONITORS - 1)} HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n".encode()
            + b"x" * 65536,
            b"POST /alerts/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + EVENTS_TOKEN.encode()
            + f"\r\nContent-Length: {len(event)}\r\n\r\n".encode() + event,
            f"POST /ping/{token(MONITORS - 2)} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
            + b"8000\r\n" + b"x" * 0x8000 + b"\r\n" * 1 + (b"8000\r\n" + b"x" * 0x8000 + b"\r\n") * 3,
        ]  # fmt: skip
        for request in itertools.cycle(requests_):
            if self._stop.is_set():
                return
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as connection:
                try:
                    connection.sendall(request)
                    answer = connection.recv(4096)
                except OSError:  # the server closed it before it read the rest: reset
                    answer = b""
            self.statuses.append(int(answer.split()[1]) if answer.startswith(b"HTTP/1.1 ") else None)


def test_slow_clients_on_every_connection_and_oversized_bodies_leave_room_for_a_ping(applied):
    serve = ServeProcess(env={"PULSE_SERVE_REQUEST_DEADLINE_S": "2"}).wait_ready()  # 64 connections at most
    try:
        with Slowloris(serve.port, connections=150) as slow, Oversized(serve.port) as big:
            wait_for(lambda: slow.opened >= 300, "slow connections closed and opened again", timeout=30)
            seconds = []
            for i in range(20):
                started = time.monotonic()
                answer = requests.post(serve.url(f"/ping/{token(i)}"), data=f"during-{i}".encode(), timeout=10)
                seconds.append(time.monotonic() - started)
                assert answer.status_code == 200
            wait_for(lambda: big.statuses.count(413) >= 3, "oversized bodies refused")
    finally:
        assert serve.stop() == 0, serve.output[-3000:]

    assert max(seconds) < 2, seconds  # the request deadline
    assert sorted(bytes(p.body).decode() for p in HeartbeatPing.select()) == sorted(f"during-{i}" for i in range(20))
    expected = re.compile(
        r"Closed (a connection from 127\.0\.0\.1|\d+ more connections in the last \d+ s) to stay within the bounds"
        r"|Refused a request from 127\.0\.0\.1 \(POST /(ping/\{token\}|alerts/events)\): answered "
        r"(413: a body over|429: over the token's rate)"
    )
    said = [line["msg"] for line in log_lines(serve) if line["level"] != "info"]
    assert said and [line for line in said if not expected.match(line)] == []
    closed = [line for line in said if line.startswith("Closed ")]  # hundreds of connections
    assert 1 <= len(closed) <= 3, closed  # the first at once, then a line a minute and one as it stops
    assert "Traceback" not in serve.output
