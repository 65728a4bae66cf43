"""The server under the metrics vendors' fakes (`Datadog`, `NewRelic`...): a local HTTP server
whose subclass answers each request with a status, a JSON body and headers.

Any of them can forge its replies instead, as a hostile vendor, proxy or gateway would: set
`forge` to a function of the request's headers that gives the status, the body (bytes as they
are, anything else as JSON) and the headers to answer (`tests.support.hostile` has some).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

Forge = Callable[[dict[str, str]], tuple[int, Any, dict[str, str]]]


class JsonApi:
    """Serves on 127.0.0.1 from construction until `close` (or the end of a ``with``) at `url`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.forge: Forge | None = None  # answers in place of the API, once the fake has seen the request
        self.window: list[float] = []
        self.connections = 0  # accepted so far
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.api = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        """The status, JSON body and extra headers for one request (``headers`` lower-cased)."""
        raise NotImplementedError

    def left(self, limit: int, period: float) -> int:
        """Count a request against ``limit`` requests per ``period`` seconds (a sliding window); the
        requests left, negative when over."""
        with self.lock:
            now = time.monotonic()
            self.window = [t for t in self.window if now - t < period] + [now]
            return limit - len(self.window)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> JsonApi:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # an idle kept-alive connection does not outlive a test

    def setup(self) -> None:
        api: JsonApi = self.server.api  # type: ignore[attr-defined]
        with api.lock:
            api.connections += 1
        super().setup()

    def do_GET(self) -> None:
        self._answer(b"")

    def do_POST(self) -> None:
        self._answer(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _answer(self, body: bytes) -> None:
        parts = urlsplit(self.path)
        headers = {name.lower(): value for name, value in self.headers.items()}
        api: JsonApi = self.server.api  # type: ignore[attr-defined]
        status, payload, extra = api.answer(self.command, parts.path, parse_qs(parts.query), headers, body)
        if api.forge is not None:
            status, payload, extra = api.forge(headers)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass
