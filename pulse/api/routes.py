"""The API's routes under ``/api/v1`` (`pulse.inbound.routes` lists them), each with the scope a
token needs, sharing one rate limiter (one budget per token across the API)."""

from __future__ import annotations

from starlette.routing import BaseRoute

from pulse.api import components, organization
from pulse.api.auth import BURST, RATE_PER_S, api_route
from pulse.inbound.limits import TokenBuckets

PREFIX = "/api/v1"


def routes(buckets: TokenBuckets | None = None) -> list[BaseRoute]:
    """Every route of the API.

    Parameters:
      buckets: the rate limiter (default: `pulse.api.auth.RATE_PER_S` a second, `BURST` at once).
    """
    buckets = buckets or TokenBuckets(rate_per_s=RATE_PER_S, burst=BURST)
    return [
        api_route(f"{PREFIX}/organization", organization.show, scope="read", buckets=buckets),
        api_route(f"{PREFIX}/components", components.index, scope="read", buckets=buckets),
        api_route(f"{PREFIX}/components/{{key}}", components.one, scope="read", buckets=buckets),
    ]
