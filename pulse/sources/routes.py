"""The URLs alert sources send to, served by `pulse serve`: ``POST /alerts/<kind>`` for the kinds
events, alertmanager and grafana, with the source's token in ``Authorization: Bearer`` (or
``X-Pulse-Token``), or ``POST /alerts/<kind>/<token>`` for a sender that sets no header.

The token is judged first: a token no source of that kind has is 404, its body never parsed.
A grafana source with a signing secret then takes only a request signed with it
(`pulse.sources.signature`), checked over the body's bytes before they are parsed: else 401.
Then each answers once the event is committed (`pulse.sources.record`): the events API 202 with
``{"status": "success", "message": "Event processed", "dedup_key": ...}`` as PagerDuty's does (its
clients need that), Alertmanager and Grafana 200 ``OK``. A body that is not the kind's format is 400
(JSON ``{"status": "invalid event", "errors": [...]}`` for the events API, each problem named), which
senders do not retry: a body that is not UTF-8 JSON, holds NaN or Infinity, or nests too deep
(`pulse.inbound.jsonbody`). A NUL or a lone surrogate in a text is no reason to refuse an alert: it
is replaced, and the event says so (`pulse.sources.formats.parse`). Any trouble of Pulse's own is a 5xx,
which Alertmanager and Grafana retry within their flush: a retried event that was committed after
all triggers its open alert again, which pages no one twice (`pulse.sources.apply`).

Bodies are bounded at `MAX_BODY` (PagerDuty's own bound; an Alertmanager group that large is cut
with ``max_alerts``). A token sends at most `BURST` events at once, then `RATE_PER_S` a second, in
each `pulse serve` process: over it, 429 with ``Retry-After``.
"""

from __future__ import annotations

import functools
import logging

from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from pulse.inbound.bounds import RefusedError
from pulse.inbound.limits import TokenBuckets
from pulse.inbound.tokens import Arrival, Write, ok, token_route
from pulse.models.alert_source import EVENTS, KINDS
from pulse.sources import formats, record, signature

logger = logging.getLogger(__name__)

MAX_BODY = 512_000  # bytes
RATE_PER_S = 10.0
BURST = 100


def _receiver(kind: str) -> Write:
    """The ``write`` of a route of ``kind``."""

    def receive(arrival: Arrival) -> Response | None:
        source = record.find(arrival.token, kind)  # before the body is read: a wrong token's is never parsed
        if source is None:
            return None
        if source.signature is not None:
            unsigned = signature.problem(source.signature, arrival.headers, arrival.body, arrival.now)
            if unsigned:
                raise RefusedError(401, unsigned)
        try:
            received = formats.parse(kind, arrival.body)
        except ValueError as e:
            raise _invalid(kind, [str(problem) for problem in e.args]) from None
        if formats.is_test(kind, received):
            logger.info("A test notification from a %s source: recorded nothing, paged no one.", kind)
            return ok()
        if not record.record(arrival.token, kind, received, arrival.now):
            return None
        if kind == EVENTS:
            answer = {"status": "success", "message": "Event processed", "dedup_key": received.dedup_key}
            return JSONResponse(answer, status_code=202)
        return ok()

    return receive


def _invalid(kind: str, problems: list[str]) -> RefusedError:
    said = {"status": "invalid event", "message": "Event object is invalid", "errors": problems}
    return RefusedError(400, "; ".join(problems), body=said if kind == EVENTS else None)


def routes() -> list[BaseRoute]:
    """The routes of every kind of source, sharing one rate per token."""
    buckets = TokenBuckets(rate_per_s=RATE_PER_S, burst=BURST)
    return [
        token_route(
            path,
            _receiver(kind),
            functools.partial(record.known, kind=kind),
            methods=("POST",),
            max_body_bytes=MAX_BODY,
            buckets=buckets,
        )
        for kind in KINDS
        for path in (f"/alerts/{kind}", f"/alerts/{kind}/{{token}}")
    ]
