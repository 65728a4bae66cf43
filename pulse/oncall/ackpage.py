"""The acknowledgement links of pages, as routes of `pulse serve`, at the path of ``PULSE_ACK_URL``
(``/ack`` when it has none); served only when ``PULSE_ACK_SECRET`` is set.

- ``GET <path>?t=TOKEN`` shows the alert (incident, component, status) and a button; it never
  acknowledges, since mail scanners and chat previews open links by themselves.
- ``POST <path>`` with the form field ``t=TOKEN`` acknowledges the alert for the person the token
  names, and says what happened (acknowledged, or acknowledged or resolved already). Its body is at
  most `MAX_BODY` bytes, and a token is taken at most `BURST` times at once, then once every
  ``1 / RATE_PER_S`` seconds (429).
- A token that is malformed, signed with another key or expired is refused (403) with the reason.

The token is a credential: the service logs the route, never the path or the query; pages are sent
``Cache-Control: no-store`` and ``Referrer-Policy: no-referrer``, and every text shown is HTML-escaped.
"""

from __future__ import annotations

import html
import logging
import math
from urllib.parse import parse_qs, urlsplit

from peewee import JOIN
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from pulse.config import Settings
from pulse.db import db
from pulse.inbound.bounds import RefusedError, read_body
from pulse.inbound.limits import TokenBuckets
from pulse.inbound.tokens import digest
from pulse.models import AlertSource, Component, OnCallAlert, utcnow
from pulse.models.alert import RESOLVED, TRIGGERED
from pulse.oncall import alerts
from pulse.oncall.tokens import InvalidTokenError, verify

logger = logging.getLogger(__name__)

MAX_BODY = 4096  # bytes of a POST: a form with one token
RATE_PER_S = 0.2  # acknowledgements a token may try per second, after its burst
BURST = 5
HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
}


def routes(settings: Settings) -> list[BaseRoute]:
    """The acknowledgement route, or none without ``settings.ack_secret``."""
    if not settings.ack_secret:
        return []
    buckets = TokenBuckets(rate_per_s=RATE_PER_S, burst=BURST)

    async def endpoint(request: Request) -> Response:
        if request.method == "POST":
            form = parse_qs((await read_body(request, MAX_BODY)).decode("utf-8", "replace"))
        else:
            form = parse_qs(request.url.query)
        token = (form.get("t") or [""])[0]
        if request.method == "POST" and token:
            wait = buckets.take(digest(token))
            if wait:
                raise RefusedError(429, "over the token's rate", headers={"Retry-After": str(math.ceil(wait))})
        return await run_in_threadpool(_answer, settings, request.method, token)

    return [Route(urlsplit(settings.ack_url).path or "/ack", endpoint, methods=["GET", "POST"])]


def _answer(settings: Settings, method: str, token: str) -> Response:
    try:
        alert_id, person = verify(token, settings.ack_secret, utcnow())
    except InvalidTokenError as e:
        return _page(403, "This link does not work", f"{str(e).capitalize()}.")
    with db.connection_context():
        if method != "POST":
            return _confirm(alert_id, person, token)
        try:
            changed, said = alerts.acknowledge(alert_id, person, "link", utcnow())
        except LookupError as e:
            return _page(410, "This link does not work", f"{str(e.args[0]).capitalize()}.")
    logger.info("Alert %s: acknowledgement link of %s: %s.", alert_id, person, said)
    return _page(200, "Acknowledged" if changed else "Nothing to do", f"{said.capitalize()}.")


def _confirm(alert_id: int, person: str, token: str) -> Response:
    found = (
        OnCallAlert.select(OnCallAlert, Component.name, AlertSource.name)
        .join(Component, JOIN.LEFT_OUTER)
        .switch(OnCallAlert)
        .join(AlertSource, JOIN.LEFT_OUTER)
        .where(OnCallAlert.id == alert_id)
        .first()
    )
    if found is None:
        return _page(410, "This link does not work", f"Alert {alert_id} no longer exists.")
    if found.source is not None:
        about = f"from {found.source.name}"
    else:
        about = found.component.name if found.component is not None else "a deleted component"
    what = f"{found.title} ({about}): alert {alert_id} is {found.status}."
    if found.status == RESOLVED:
        return _page(200, "Nothing to do", what)
    button = (
        f'<form method="post"><input type="hidden" name="t" value="{html.escape(token)}">'
        f'<button type="submit">Acknowledge as {html.escape(person)}</button></form>'
    )
    ask = "Acknowledge it to stop the escalation." if found.status == TRIGGERED else ""
    return _page(200, "Acknowledge this alert?", f"{what} {ask}", button)


def _page(status: int, title: str, text: str, extra: str = "") -> Response:
    body = (
        '<!doctype html><html><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;max-width:32em;margin:3em auto;padding:0 1em}"
        "button{font-size:1.2em;padding:.6em 1.2em}</style></head>"
        f"<body><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>{extra}</body></html>"
    )
    return HTMLResponse(body, status_code=status, headers=HEADERS)
