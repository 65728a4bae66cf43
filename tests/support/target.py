"""A local HTTP target whose answers the test controls.

    with HTTPTarget() as target:
        target.answer("/health", status=503, body=b"down")
        target.redirect("/old", "/health")
        fetch(...target.url("/old")...)
        assert target.received[0].path == "/old"
        posts = target.wait_for(lambda got: len(got) >= 2 and got, "two requests")  # no sleep

Each path answers with its `Answer` (status, headers, body, a delay before the status line, a
trickled body); unknown paths answer 404. Every request is recorded in `received`, and `wait_for`
awaits the ones the test expects (each arrival wakes it). Pass an `ssl.SSLContext` (server side)
to serve https. Delays and trickles wait on an event that `close` sets, so closing never waits
for them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import http.server
import itertools
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from tests.support.worker import free_port

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Answer:
    """What the target answers on one path.

    Parameters:
      status: the status code.
      body: the body, sent with a Content-Length.
      headers: extra response headers.
      delay_s: seconds to wait before sending the status line.
      trickle_s: if set, the body is sent one byte at a time, this many seconds apart.
      chunked: send the body with Transfer-Encoding: chunked (a chunk per trickled byte)
        instead of a Content-Length.
    """

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    delay_s: float = 0.0
    trickle_s: float = 0.0
    chunked: bool = False


@dataclasses.dataclass(frozen=True)
class Received:
    """One request as the target received it; ``headers`` has lower-cased names."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, target: HTTPTarget) -> None:
        self.target = target
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hang up early (timeouts, truncated bodies, TLS refused) are the point


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # an idle keep-alive connection does not outlive a test
    server: _Server

    def setup(self) -> None:
        target = self.server.target
        self.raw = self.request
        with target.lock:
            target.connections += 1
            target.open.add(self.raw)
        if target.tls is not None:
            self.request = target.tls.wrap_socket(self.request, server_side=True)
        super().setup()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.target.lock:
                self.server.target.open.discard(self.raw)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the name http.server uses
        pass

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (ConnectionError, ssl.SSLError, TimeoutError):
            self.close_connection = True

    def do_GET(self) -> None:
        target = self.server.target
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        with target.lock:
            target.received.append(Received(self.command, self.path, headers, body))
            target.arrived.notify_all()
            answer = target.answers.get(self.path.split("?", 1)[0], Answer(status=404, body=b"not found"))
        if answer.delay_s and target.closing.wait(answer.delay_s):
            return
        self.send_response(answer.status)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if answer.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        if self.command == "HEAD":
            return
        step = 1 if answer.trickle_s else max(len(answer.body), 1)
        for i in range(0, len(answer.body), step):
            part = answer.body[i : i + step]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part) if answer.chunked else part)
            if answer.trickle_s and target.closing.wait(answer.trickle_s):
                return
        if answer.chunked:
            self.wfile.write(b"0\r\n\r\n")

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET  # noqa: N815 - http.server's names


class HTTPTarget:
    """A threaded HTTP(S) server on 127.0.0.1 and a free port; use it as a context manager."""

    def __init__(self, *, tls: ssl.SSLContext | None = None) -> None:
        self.tls = tls
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)  # notified at each request received
        self.closing = threading.Event()
        self.answers: dict[str, Answer] = {}
        self.received: list[Received] = []
        self.connections = 0
        self.open: set[socket.socket] = set()  # the connections of clients, as accepted
        self._server = _Server(self)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="http-target", daemon=True
        )

    def url(self, path: str = "/") -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def wait_for(self, probe: Callable[[list[Received]], T], what: str, timeout: float = 30.0) -> T:
        """The first truthy value of ``probe(received)``, tried at once and at each request received
        (under the lock: a quick function of the list); fail naming ``what`` after ``timeout`` s."""
        with self.arrived:
            value = self.arrived.wait_for(lambda: probe(list(self.received)), timeout)
            if not value:
                raise AssertionError(
                    f"timed out after {timeout} s waiting for {what}; received {len(self.received)} requests: "
                    + ", ".join(f"{r.method} {r.path}" for r in self.received)
                )
            return value

    def answer(self, path: str, answer: Answer | None = None, **fields: Any) -> None:
        """Answer requests to ``path`` (query ignored) with ``answer`` or ``Answer(**fields)``."""
        with self.lock:
            self.answers[path] = answer or Answer(**fields)

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        """Redirect ``path`` to ``location`` (a path of this target or any URL)."""
        self.answer(path, status=status, headers={"Location": location})

    def chain(self, hops: int, final: str, prefix: str = "/hop") -> str:
        """Make ``hops`` redirects that end at ``final``; return the first path."""
        paths = [f"{prefix}/{i}" for i in range(hops)] + [final]
        for here, there in itertools.pairwise(paths):
            self.redirect(here, there)
        return paths[0]

    def close_connections(self) -> None:
        """Close every client connection, as a server's idle timeout does."""
        with self.lock:
            for conn in self.open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)

    def start(self) -> HTTPTarget:
        self._thread.start()
        return self

    def close(self) -> None:
        self.closing.set()
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> HTTPTarget:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on."""
    return free_port()
