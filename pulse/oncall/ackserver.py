"""`pulse oncall ack-server`: the endpoint of the acknowledgement links in pages, for those who run
no web application of their own. Standard library WSGI, no framework.

- ``GET <path>?t=TOKEN`` shows the alert (incident, component, status) and a button; it never
  acknowledges, since mail scanners and chat previews open links by themselves.
- ``POST <path>`` with the form field ``t=TOKEN`` acknowledges the alert for the person the token
  names, and says what happened (acknowledged, or acknowledged or resolved already).
- A token that is malformed, signed with another key or expired is refused (403) with the reason;
  any other path is 404, any other method 405.

The token is a credential: it is never logged (the access log shows the path without its query),
pages are sent ``Cache-Control: no-store`` and ``Referrer-Policy: no-referrer``, and every text
shown is HTML-escaped.

The server is public and holds little: a connection carries one request, which must arrive whole
(request line, headers and body) within ``deadline`` seconds, however slowly its bytes drip; a
POST states its body's length (``Content-Length``, decimal, at most `MAX_BODY` bytes) and the body is
read before the application runs; at most ``connections`` are served at once, and one more is
answered 503 and closed. Each refused request is one WARNING line in the log, never a traceback.
"""

from __future__ import annotations

import html
import io
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from http import HTTPStatus
from socketserver import ThreadingMixIn
from typing import IO, Any, cast
from urllib.parse import parse_qs, urlsplit
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer

from peewee import JOIN

from pulse.config import Settings
from pulse.db import db
from pulse.models import Component, Incident, OnCallAlert, utcnow
from pulse.models.alert import RESOLVED, TRIGGERED
from pulse.oncall import alerts
from pulse.oncall.tokens import InvalidTokenError, verify

logger = logging.getLogger(__name__)

MAX_BODY = 4096  # bytes of a POST: a form with one token
DEADLINE = 10.0  # seconds a client has to send its whole request
CONNECTIONS = 64  # served at once; one more is answered 503
_LENGTH = re.compile(r"[0-9]{1,9}")
HEADERS = [
    ("Content-Type", "text/html; charset=utf-8"),
    ("Cache-Control", "no-store"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'"),
]
StartResponse = Callable[..., Any]
App = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def application(settings: Settings) -> App:
    """The WSGI application: acknowledgement links signed with ``settings.ack_secret``, at the path
    of ``settings.ack_url`` (``/ack`` when it has none)."""
    path = urlsplit(settings.ack_url).path or "/ack"

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "") != path:
            return _page(start_response, "404 Not Found", "Not found", "There is nothing here.")
        method = environ.get("REQUEST_METHOD", "GET")
        if method not in ("GET", "POST"):
            return _page(start_response, "405 Method Not Allowed", "Not allowed", "Open the link from the page.")
        if method == "POST":  # the server has read the body, and bounded it
            form = parse_qs(environ["wsgi.input"].read(MAX_BODY).decode("utf-8", "replace"))
        else:
            form = parse_qs(environ.get("QUERY_STRING", ""))
        try:
            alert_id, person = verify((form.get("t") or [""])[0], settings.ack_secret, utcnow())
        except InvalidTokenError as e:
            return _page(start_response, "403 Forbidden", "This link does not work", f"{str(e).capitalize()}.")
        with db.connection_context():
            if method == "GET":
                return _confirm(start_response, alert_id, person, (form.get("t") or [""])[0])
            try:
                changed, said = alerts.acknowledge(alert_id, person, "link", utcnow())
            except LookupError as e:
                return _page(start_response, "410 Gone", "This link does not work", f"{str(e.args[0]).capitalize()}.")
        logger.info("Alert %s: acknowledgement link of %s: %s.", alert_id, person, said)
        return _page(start_response, "200 OK", "Acknowledged" if changed else "Nothing to do", f"{said.capitalize()}.")

    return app


def _confirm(start_response: StartResponse, alert_id: int, person: str, token: str) -> list[bytes]:
    found = (
        OnCallAlert.select(OnCallAlert, Incident.title, Component.name)
        .join(Incident)
        .switch(OnCallAlert)
        .join(Component, JOIN.LEFT_OUTER)
        .where(OnCallAlert.id == alert_id)
        .first()
    )
    if found is None:
        return _page(start_response, "410 Gone", "This link does not work", f"Alert {alert_id} no longer exists.")
    component = found.component.name if found.component is not None else "a deleted component"
    what = f"{found.incident.title} ({component}): alert {alert_id} is {found.status}."
    if found.status == RESOLVED:
        return _page(start_response, "200 OK", "Nothing to do", what)
    button = (
        f'<form method="post"><input type="hidden" name="t" value="{html.escape(token)}">'
        f'<button type="submit">Acknowledge as {html.escape(person)}</button></form>'
    )
    ask = "Acknowledge it to stop the escalation." if found.status == TRIGGERED else ""
    return _page(start_response, "200 OK", "Acknowledge this alert?", f"{what} {ask}", button)


def _page(start_response: StartResponse, status: str, title: str, text: str, extra: str = "") -> list[bytes]:
    body = (
        '<!doctype html><html><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;max-width:32em;margin:3em auto;padding:0 1em}"
        "button{font-size:1.2em;padding:.6em 1.2em}</style></head>"
        f"<body><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>{extra}</body></html>"
    ).encode()
    start_response(status, [*HEADERS, ("Content-Length", str(len(body)))])
    return [body]


class _Handler(WSGIRequestHandler):
    """One request per connection, read whole within the server's deadline, then answered."""

    server: _Server
    refusal = ""  # why the request is refused, for its log line

    def setup(self) -> None:
        super().setup()
        self.rfile = io.BufferedReader(_Deadline(self.connection, time.monotonic() + self.server.deadline))

    def handle(self) -> None:
        try:
            body = self._read()
        except TimeoutError:
            self._log_refusal(f"not sent whole within {self.server.deadline:g} s; the connection is closed")
            return
        except OSError as e:  # the client went away, perhaps while it was answered a refusal (logged already)
            if not self.refusal:
                self._log_refusal(f"the connection failed ({type(e).__name__}) before the request was read")
            return
        if body is None:
            return
        output = cast(IO[bytes], self.wfile)
        handler = _Answer(io.BytesIO(body), output, self.get_stderr(), self.get_environ(), multithread=True)
        handler.request_handler = self  # type: ignore[attr-defined]  # for its log line, as wsgiref does
        handler.run(self.server.app)

    def _read(self) -> bytes | None:
        """The request's body (empty but for a POST), or None when the request was refused."""
        self.raw_requestline = self.rfile.readline(65537)
        if len(self.raw_requestline) > 65536:
            self.requestline = self.request_version = self.command = ""
            self._refuse(HTTPStatus.REQUEST_URI_TOO_LONG, "the request line is over 64 KiB")
            return None
        if not self.parse_request():  # it answered 400 (or 505), saying why
            return None
        if self.command != "POST":
            return b""
        lengths = self.headers.get_all("Content-Length") or []
        if not lengths:
            self._refuse(HTTPStatus.LENGTH_REQUIRED, "a POST without a Content-Length")
            return None
        if len(lengths) > 1 or not _LENGTH.fullmatch(lengths[0]):
            self._refuse(HTTPStatus.BAD_REQUEST, "the Content-Length is not one decimal number")
            return None
        if int(lengths[0]) > MAX_BODY:
            self._refuse(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"a body over {MAX_BODY} bytes")
            return None
        body = self.rfile.read(int(lengths[0]))
        if len(body) < int(lengths[0]):
            self._log_refusal("the body ended before its Content-Length; the connection is closed")
            return None
        return body

    def _refuse(self, status: HTTPStatus, reason: str) -> None:
        self.refusal = reason
        self.close_connection = True
        self.send_error(status)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Answer a refusal; its reason is logged, not sent (the request line it quotes may hold a
        token)."""
        if not self.refusal:  # parse_request's message, without the request line it quotes
            self.refusal = (message or HTTPStatus(code).phrase).partition(" (")[0]
        super().send_error(code)

    def log_error(self, fmt: str, *args: Any) -> None:
        """Nothing: the line of `log_request` says it once."""

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        """One line per request, without the query: it holds the token."""
        code = getattr(code, "value", code)  # an HTTPStatus, or the text of a WSGI status
        if self.refusal:
            self._log_refusal(f"answered {code}: {self.refusal}")
            return
        logger.info("%s %s %s", self.command, urlsplit(self.path).path, code)

    def _log_refusal(self, reason: str) -> None:
        path = urlsplit(getattr(self, "path", "") or "").path or "-"
        logger.warning(
            "Refused a request from %s (%s %s): %s.", self.client_address[0], self.command or "-", path, reason
        )


class _Answer(ServerHandler):
    def log_exception(self, exc_info: Any) -> None:
        """A bug: its traceback goes to the log, not to stderr (the client is answered 500)."""
        logger.error("The acknowledgement page failed; the client is answered 500.", exc_info=exc_info)


class _Deadline(io.RawIOBase):
    """A socket's input that ends in `TimeoutError` at ``deadline`` (a `time.monotonic` time): a
    socket's own timeout starts afresh at each byte received."""

    def __init__(self, connection: socket.socket, deadline: float) -> None:
        self.connection = connection
        self.deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the deadline has passed")
        self.connection.settimeout(left)
        return self.connection.recv_into(buffer)


_BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"


class _Server(ThreadingMixIn, WSGIServer):
    """A thread per connection, at most ``connections`` at once."""

    daemon_threads = True
    request_queue_size = 128  # the listen backlog

    def __init__(self, address: tuple[str, int], app: App, *, deadline: float, connections: int) -> None:
        self.app = app
        self.deadline = deadline
        self.connections = connections
        self._slots = threading.BoundedSemaphore(connections)
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            logger.warning(
                "Refused a connection from %s: %d are open already; it is answered 503 and closed.",
                client_address[0],
                self.connections,
            )
            try:
                request.setblocking(False)
                request.send(_BUSY)
            except OSError:
                pass  # the client is gone already
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A bug: its traceback goes to the log, not to stderr."""
        logger.exception("The request from %s failed; the connection is closed.", client_address[0])


def serve(
    settings: Settings, host: str, port: int, *, deadline: float = DEADLINE, connections: int = CONNECTIONS
) -> WSGIServer:
    """A server of `application` on ``host``:``port`` (not yet serving: call ``serve_forever``).

    Parameters:
      deadline: seconds a client has to send its whole request.
      connections: how many are served at once.
    """
    return _Server((host, port), application(settings), deadline=deadline, connections=connections)
