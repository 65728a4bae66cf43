"""The URLs jobs ping, served by `pulse serve`, as healthchecks.io has them: ``/ping/<token>`` (a
success), ``/ping/<token>/start``, ``/ping/<token>/fail`` and ``/ping/<token>/<exit status>`` (0 a
success, 1 to 255 a failure), by GET, HEAD or POST.

Each answers ``OK`` once the ping is committed (`pulse.heartbeats.ping`), 404 for a token no
monitor has, 400 for another last part. A body is kept up to `pulse.heartbeats.ping.BODY_LIMIT`
bytes (the ``Ping-Body-Limit`` header says so) and refused above `MAX_BODY` (a job's output is
shorter; a larger body is not a ping). A token pings at most `BURST` times at once, then once a
second (`RATE_PER_S`), in each `pulse serve` process: jobs ping once a run, and a client retrying
fast is answered 429 before its pings reach the database.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import BaseRoute

from pulse.heartbeats import ping
from pulse.inbound.bounds import RefusedError
from pulse.inbound.limits import TokenBuckets
from pulse.inbound.tokens import Arrival, ok, token_route

METHODS = ("GET", "POST")  # GET answers HEAD too
MAX_BODY = 100_000  # bytes
RATE_PER_S = 1.0
BURST = 10


def _ping(arrival: Arrival) -> Response | None:
    try:
        recorded = ping.record(arrival.token, arrival.params.get("kind", "success"), arrival.body, arrival.now)
    except ValueError as e:
        raise RefusedError(400, str(e)) from None
    if not recorded:
        return None
    answer = ok()
    answer.headers["Ping-Body-Limit"] = str(ping.BODY_LIMIT)
    return answer


def routes() -> list[BaseRoute]:
    """The ping routes, sharing one rate per token."""
    buckets = TokenBuckets(rate_per_s=RATE_PER_S, burst=BURST)
    return [
        token_route(path, _ping, ping.known, methods=METHODS, max_body_bytes=MAX_BODY, buckets=buckets)
        for path in ("/ping/{token}", "/ping/{token}/{kind}")
    ]
