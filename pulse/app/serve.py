"""The composition root: what `pulse serve` serves, put together from what each domain exports.

Nothing of Pulse imports this module but the entries that start from it (`pulse serve`); it
imports the domains and the inbound service, so `pulse.inbound` keeps the server, bounds, tokens
and limits and knows no domain. The routes, each domain's own:

- the acknowledgement links of pages (`pulse.oncall.ackpage`), at the path of ``PULSE_ACK_URL``;
- the URLs heartbeat monitors are pinged at (`pulse.heartbeats.routes`);
- the URLs alert sources send their alerts to (`pulse.sources.routes`);
- Twilio's messaging webhook, replies to SMS pages (`pulse.oncall.smshook`), at ``/sms/twilio``;
- the API (`pulse.api.routes`), under ``/api/v1``, for tokens with scopes (`pulse.api.auth`).

A route that writes is a `pulse.inbound.tokens.token_route` (a token of its own, a rate per token,
a body bound), or, for a vendor's webhook, checks the vendor's signature first (`pulse.inbound.twilio`).
"""

from __future__ import annotations

from starlette.routing import BaseRoute

from pulse.api import routes as api
from pulse.config import Settings, split
from pulse.heartbeats import routes as heartbeats
from pulse.inbound.server import Service
from pulse.oncall import ackpage, smshook
from pulse.sources import routes as sources


def routes(settings: Settings) -> list[BaseRoute]:
    """Every route of the service, for ``settings``."""
    domains = [*ackpage.routes(settings), *heartbeats.routes(), *sources.routes(), *smshook.routes(settings)]
    return [*domains, *api.routes()]


def service(settings: Settings, host: str | None = None, port: int | None = None) -> Service:
    """`pulse serve`'s service as the settings say, serving `routes`; ``host`` and ``port`` override
    the settings' own."""
    return Service(
        settings.serve_host if host is None else host,
        settings.serve_port if port is None else port,
        served=routes(settings),
        metrics_host=settings.serve_metrics_host,
        metrics_port=settings.serve_metrics_port,
        request_deadline_s=settings.serve_request_deadline_s,
        max_connections=settings.serve_max_connections,
        max_per_address=settings.serve_max_connections_per_address,
        trusted_proxies=split(settings.serve_trusted_proxies),
    )
