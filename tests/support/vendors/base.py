"""What every fake shares: the `Received`, `Fail`, `Hang` and `Forge` records, the `Fake` base class (read, check,
answer, and the vendor's own error format for a scripted `Fail`), the reply helpers, the token buckets of the rate
limits, and the one ThreadingHTTPServer and its handler that serve every HTTP fake under its path prefix.
"""

from __future__ import annotations

import dataclasses
import http
import http.server
import json
import math
import re
import select
import socket
import time
import urllib.parse
from collections.abc import Callable, Mapping
from email.message import EmailMessage
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.vendors.facade import Vendors


@dataclasses.dataclass(frozen=True)
class Received:
    """One request (for smtp: one message) as a fake received it.

    ``headers`` has lower-cased names. ``json`` is the body parsed as JSON (Slack: also a form's ``payload``),
    ``form`` the body parsed as application/x-www-form-urlencoded (Twilio), ``plaintext`` a push message's decrypted
    payload and ``email`` the parsed smtp message. ``destination`` names the rate-limit bucket: the Slack hook's B…
    id, the Discord webhook id, the Teams workflow id, the webhook receiver's name, the push subscription id, "team"
    for Resend, the account sid for Twilio, the recipients joined with "," for smtp ("" when the URL is unknown).
    For smtp, ``method`` is "DATA", ``path`` the envelope sender, ``headers`` the message's headers and ``query``
    holds ``auth``, the login, when the client authenticated.
    """

    vendor: str
    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes
    json: Any | None = None
    form: Mapping[str, str] | None = None
    plaintext: bytes | None = None
    email: EmailMessage | None = None
    at: float = dataclasses.field(default_factory=time.monotonic)
    destination: str = ""


@dataclasses.dataclass(frozen=True)
class Fail:
    """A scripted error answer.

    Parameters:
      status: the HTTP status (for smtp: the reply code, e.g. 451 or 550).
      body: the body; None means the vendor's own error body for ``status`` (for smtp: the reply text).
      headers: extra response headers, added last.
      retry_after: sets Retry-After (and the ``retry_after`` field of Discord's body).
    """

    status: int
    body: bytes | None = None
    headers: Mapping[str, str] | None = None
    retry_after: float | None = None


@dataclasses.dataclass(frozen=True)
class Hang:
    """A scripted non-answer: the request waits until the client hangs up or the `Vendors` closes."""


@dataclasses.dataclass(frozen=True)
class Forge:
    """A scripted answer of a hostile vendor, proxy or gateway, made from the request (HTTP vendors only).

    Parameters:
      reply: of the request's headers (names lower-cased), the status, the body (bytes as they are, anything else
        as JSON) and the headers to answer, as a metrics fake's ``forge`` (`tests.support.hostile` has some).
    """

    reply: Callable[[Mapping[str, str]], tuple[int, Any, Mapping[str, str]]]

    def answer(self, headers: Mapping[str, str]) -> Reply:
        status, body, extra = self.reply(headers)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return Reply(status, data, {"Content-Type": "application/json", **extra})


Answer = Fail | Hang | Forge


@dataclasses.dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes


@dataclasses.dataclass
class Reply:
    """An answer; ``accept`` puts the request in `Vendors.received`."""

    status: int
    body: bytes = b""
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    accept: bool = False


def json_reply(status: int, payload: Any, headers: Mapping[str, str] | None = None, accept: bool = False) -> Reply:
    return Reply(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})}, accept)


def text_reply(status: int, text: str, headers: Mapping[str, str] | None = None, accept: bool = False) -> Reply:
    return Reply(status, text.encode(), {"Content-Type": "text/plain; charset=utf-8", **(headers or {})}, accept)


def loads(body: bytes) -> Any | None:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _seconds(value: float) -> str:
    """A scripted Retry-After: whole seconds as an integer, anything else as given."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def whole_seconds(value: float) -> str:
    """A computed Retry-After: whole seconds, at least 1."""
    return str(max(1, math.ceil(value)))


def phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Error"


@dataclasses.dataclass
class Bucket:
    """A token bucket on time.monotonic()."""

    rate: float
    burst: int
    tokens: float
    last: float

    def take(self, now: float) -> float:
        """Take a token; return 0 if there was one, else the seconds until there is."""
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


@dataclasses.dataclass(frozen=True)
class Quota:
    """What taking a token left: ``retry_after`` 0 means the request may go on."""

    limit: int
    remaining: int
    reset_after: float
    retry_after: float


class Fake:
    """One HTTP vendor: how to read, check and answer a request, and its error format."""

    name = ""
    route = re.compile(r"$^")

    def __init__(self, vendors: Vendors) -> None:
        self.vendors = vendors

    def destination(self, match: re.Match[str] | None) -> str:
        return match[1] if match else ""

    def parse(self, request: Request) -> Received:
        match = self.route.fullmatch(request.path)
        return Received(
            self.name,
            request.method,
            request.path,
            request.query,
            request.headers,
            request.body,
            json=loads(request.body),
            destination=self.destination(match),
        )

    def handle(self, request: Request, received: Received) -> Reply:
        raise NotImplementedError

    def error(self, status: int, message: str, retry_after: float | None = None) -> Reply:
        """The vendor's error answer for ``status``."""
        raise NotImplementedError

    def fail(self, fail: Fail) -> Reply:
        if fail.body is None:
            reply = self.error(fail.status, "Scripted failure", fail.retry_after)
        else:
            kind = "application/json" if loads(fail.body) is not None else "text/plain; charset=utf-8"
            reply = Reply(fail.status, fail.body, {"Content-Type": kind})
        if fail.retry_after is not None:
            reply.headers["Retry-After"] = _seconds(fail.retry_after)
        reply.headers.update(fail.headers or {})
        return reply


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, vendors: Vendors) -> None:
        self.vendors = vendors
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hang up early (timeouts, hangs) are the point


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # an idle keep-alive connection does not outlive a test
    server: Server

    def setup(self) -> None:
        super().setup()
        self.server.vendors._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.vendors._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the name http.server uses
        pass

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except OSError:
            self.close_connection = True

    def do_POST(self) -> None:
        try:
            body = self._body()
        except ValueError:
            self.send_error(400, "bad body framing")
            return
        parts = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = self.server.vendors._serve(Request(self.command, parts.path, query, headers, body))
        if reply is None:
            self._hang()
            return
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.status not in (204, 304):
            self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if self.command != "HEAD" and reply.status not in (204, 304):
            self.wfile.write(reply.body)

    do_GET = do_HEAD = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_POST  # noqa: N815 - http.server's names

    def _body(self) -> bytes:
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length > 0 else b""
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0], 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass  # trailers
        return b"".join(chunks)

    def _hang(self) -> None:
        """Answer nothing until the client hangs up or the fakes close."""
        self.close_connection = True
        while not self.server.vendors._closing.wait(0.05):
            readable, _, _ = select.select([self.connection], [], [], 0)
            try:
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    return
            except OSError:
                return
