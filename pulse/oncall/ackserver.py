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
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from urllib.parse import parse_qs, urlsplit
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from peewee import JOIN

from pulse.config import Settings
from pulse.db import db
from pulse.models import Component, Incident, OnCallAlert, utcnow
from pulse.models.alert import RESOLVED, TRIGGERED
from pulse.oncall import alerts
from pulse.oncall.tokens import InvalidTokenError, verify

logger = logging.getLogger(__name__)

MAX_BODY = 4096  # bytes of a POST: a form with one token
HEADERS = [
    ("Content-Type", "text/html; charset=utf-8"),
    ("Cache-Control", "no-store"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'"),
]
StartResponse = Callable[..., Any]


def application(settings: Settings) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    """The WSGI application: acknowledgement links signed with ``settings.ack_secret``, at the path
    of ``settings.ack_url`` (``/ack`` when it has none)."""
    path = urlsplit(settings.ack_url).path or "/ack"

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "") != path:
            return _page(start_response, "404 Not Found", "Not found", "There is nothing here.")
        method = environ.get("REQUEST_METHOD", "GET")
        if method not in ("GET", "POST"):
            return _page(start_response, "405 Method Not Allowed", "Not allowed", "Open the link from the page.")
        if method == "POST":
            try:
                length = int(environ.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = MAX_BODY + 1
            if length > MAX_BODY:
                return _page(start_response, "413 Content Too Large", "Too large", "Open the link from the page.")
            form = parse_qs(environ["wsgi.input"].read(length).decode("utf-8", "replace"))
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
    timeout = 10  # seconds a client has to send its request

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        """One line per request, without the query: it holds the token."""
        logger.info("%s %s %s", self.command, urlsplit(self.path).path, code)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def serve(settings: Settings, host: str, port: int) -> WSGIServer:
    """A server of `application` on ``host``:``port`` (not yet serving: call ``serve_forever``)."""
    return make_server(host, port, application(settings), server_class=_Server, handler_class=_Handler)
