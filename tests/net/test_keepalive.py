"""Kept-alive connections (`Request(keep_alive=True)`): reused per thread and origin, never where a
fresh connection would not be allowed, and replaced when the server closed them."""

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from pulse.net import AddressPolicy, Request, fetch, keepalive
from tests.support.target import Answer, HTTPTarget

DEFAULT = AddressPolicy()


@pytest.fixture
def target():
    with HTTPTarget() as server:
        server.answer("/", body=b"ok")
        yield server


def get(url: str, policy: AddressPolicy = DEFAULT, *, keep_alive: bool = True, verify: bool | str = True):
    return fetch(Request("GET", url, keep_alive=keep_alive, verify=verify), policy)


def test_requests_to_one_origin_share_a_connection(target):
    results = [get(target.url()) for _ in range(5)]

    assert [(r.status, r.body, e) for r, e in results] == [(200, b"ok", None)] * 5
    assert target.connections == 1
    assert {r.headers.get("connection") for r in target.received} == {"keep-alive"}
    assert all(r.connected and r.ip == "127.0.0.1" for r, _ in results)


def test_without_keep_alive_each_request_has_its_connection(target):
    results = [get(target.url(), keep_alive=False) for _ in range(3)]

    assert [r.status for r, _ in results] == [200] * 3
    assert target.connections == 3
    assert {r.headers.get("connection") for r in target.received} == {"close"}


def test_each_thread_has_its_own_connection(target):
    def twice() -> None:
        for _ in range(2):
            assert get(target.url())[0].status == 200

    threads = [threading.Thread(target=twice) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(target.received) == 6
    assert target.connections == 3


def test_a_connection_is_kept_per_origin():
    with HTTPTarget() as one, HTTPTarget() as two:
        for _ in range(2):
            get(one.url())
            get(two.url())

        assert (one.connections, two.connections) == (1, 1)


def test_a_kept_connection_is_not_used_under_a_policy_that_refuses_it(target):
    assert get(target.url())[0].status == 200

    response, error = get(target.url(), AddressPolicy(allow_private=False))

    assert error is not None and error.startswith("refused: 127.0.0.1 is a loopback address"), error
    assert (response.status, len(target.received)) == (None, 1)


@pytest.mark.parametrize(
    "answer",
    [
        Answer(body=b"bye", headers={"Connection": "close"}),  # the server says it closes
        Answer(body=b"x" * (2 << 20)),  # the body is not read to its end (over the 1 MiB cap)
    ],
    ids=["connection-close", "body-unread"],
)
def test_a_connection_that_cannot_serve_again_is_not_kept(target, answer):
    target.answers["/once"] = answer

    get(target.url("/once"))
    get(target.url())

    assert target.connections == 2


def test_a_connection_the_server_closed_while_idle_is_replaced(target):
    get(target.url())
    target.close_connections()  # as a server's idle timeout does

    response, error = get(target.url())

    assert (response.status, error) == (200, None)
    assert target.connections == 2


def test_a_connection_closed_as_the_request_goes_out_is_replaced():
    with answers_once() as server:
        first, _ = get(server.url)
        second, error = get(server.url)  # the first connection reads this request and closes

        assert (first.status, second.status, error) == (200, 200, None)
        assert server.requests == 3 and server.connections == 2


def test_an_idle_connection_expires(target, monkeypatch):
    get(target.url())
    monkeypatch.setattr(keepalive, "IDLE_S", 0.0)

    get(target.url())

    assert target.connections == 2


def test_a_thread_keeps_a_bounded_number_of_connections(monkeypatch):
    monkeypatch.setattr(keepalive, "PER_THREAD", 2)
    with HTTPTarget() as a, HTTPTarget() as b, HTTPTarget() as c:
        for server in (a, b, c, a, c):
            get(server.url())

        assert (a.connections, b.connections, c.connections) == (2, 1, 1)  # a's went first


def test_a_kept_tls_connection_reports_its_certificate(tls_target, certificates):
    ca = (certificates / "ca.pem").read_text()
    results = [get(tls_target.url(), verify=ca) for _ in range(2)]

    assert [(r.status, e) for r, e in results] == [(404, None)] * 2
    assert tls_target.connections == 1
    assert results[0][0].certificate_expiration_ms == results[1][0].certificate_expiration_ms is not None


def test_a_kept_tls_connection_is_not_used_without_its_verification(tls_target, certificates):
    get(tls_target.url(), verify=(certificates / "ca.pem").read_text())

    _, error = get(tls_target.url())  # verified against the system's CAs: a new handshake

    assert error is not None and "certificate verify failed" in error
    assert tls_target.connections == 2


class _OnceServer:
    """Answers the first request of each connection with Content-Length and no Connection header
    (so the client keeps it), then reads the next request and closes without answering: a server
    whose idle timeout strikes just as a request arrives."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/"
        self.requests = self.connections = 0
        self.lock = threading.Lock()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn: socket.socket) -> None:
        with self.lock:
            self.connections += 1
        with conn:
            conn.settimeout(5)
            for number in range(2):
                received = b""
                while b"\r\n\r\n" not in received and (chunk := conn.recv(4096)):
                    received += chunk
                if not received:
                    return
                with self.lock:
                    self.requests += 1
                if number == 0:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")


@contextlib.contextmanager
def answers_once() -> Iterator[_OnceServer]:
    server = _OnceServer()
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (closing it would not)
        server.listener.close()
        thread.join(5)
