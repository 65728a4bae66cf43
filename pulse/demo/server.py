"""The demo's world: an HTTP server on a free local port serving a website that is always up, an
API that goes down for a while every few minutes, a slow search endpoint, and a webhook receiver
that checks Pulse's signatures, as a receiver should."""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import time
from typing import Any

from pulse.demo.feed import received

# The API is down DOWN_FOR seconds of every CYCLE, from DOWN_AT seconds after the start: with
# checks every 15 s and a failure threshold of 2, the incident opens within about a minute.
DOWN_AT, DOWN_FOR, CYCLE = 10.0, 45.0, 150.0
SLOW_S = 0.8  # the search endpoint's answer time, above its 500 ms condition


class DemoServer(http.server.ThreadingHTTPServer):
    """The demo's endpoints and its webhook receiver, on a free local port."""

    daemon_threads = True

    def __init__(self, secret: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.secret = secret
        self.started = time.monotonic()
        self.url = f"http://127.0.0.1:{self.server_address[1]}"

    def api_down(self) -> bool:
        elapsed = time.monotonic() - self.started - DOWN_AT
        return elapsed >= 0 and elapsed % CYCLE < DOWN_FOR


class _Handler(http.server.BaseHTTPRequestHandler):
    server: DemoServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path == "/":
            self._answer(200, b"<h1>Demo Inc.</h1>", "text/html")
        elif self.path == "/api/health":
            down = self.server.api_down()
            self._answer(503 if down else 200, json.dumps({"status": "DOWN" if down else "UP"}).encode())
        elif self.path == "/search":
            time.sleep(SLOW_S)
            self._answer(200, b'{"results": []}')
        else:
            self._answer(404, b'{"error": "not found"}')

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/hooks/pulse":
            self._answer(404, b"")
            return
        signed = verify(self.server.secret, self.headers.get("X-Pulse-Timestamp", ""), body, self.headers)
        self._answer(204 if signed else 401, b"")
        received(json.loads(body), signed)

    def _answer(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass


def verify(secret: str, timestamp: str, body: bytes, headers: Any) -> bool:
    """What a webhook receiver should do: recompute the signature and compare in constant time."""
    expected = "v1=" + hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers.get("X-Pulse-Signature", ""))
