"""The routes `pulse serve` serves. A domain adds its own here, in a few lines:

- the acknowledgement links of pages (`pulse.oncall.ackpage`), at the path of ``PULSE_ACK_URL``;
- a route that writes is a `pulse.inbound.tokens.token_route` (a token of its own, a rate per
  token, a body bound). Heartbeat pings, for example, would be::

      def ping(arrival: Arrival) -> Response | None:
          kind = arrival.params.get("kind", "success")
          return ok() if heartbeats.ping.record(arrival.token, kind, arrival.body, arrival.now) else None

      token_route("/ping/{token}", ping, methods=PING, max_body_bytes=100_000, buckets=buckets),
      token_route("/ping/{token}/{kind}", ping, methods=PING, max_body_bytes=100_000, buckets=buckets),

  with ``PING = ("GET", "POST")`` and one ``buckets = TokenBuckets(...)`` made in `routes`.
"""

from __future__ import annotations

from starlette.routing import BaseRoute

from pulse.config import Settings
from pulse.oncall import ackpage


def routes(settings: Settings) -> list[BaseRoute]:
    """Every route of the service, for ``settings``."""
    return [*ackpage.routes(settings)]
