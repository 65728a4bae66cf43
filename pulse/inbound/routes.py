"""The routes `pulse serve` serves, each domain's own (this module is where they meet; the rest
of `pulse.inbound` knows no domain):

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
from pulse.config import Settings
from pulse.heartbeats import routes as heartbeats
from pulse.oncall import ackpage, smshook
from pulse.sources import routes as sources


def routes(settings: Settings) -> list[BaseRoute]:
    """Every route of the service, for ``settings``."""
    domains = [*ackpage.routes(settings), *heartbeats.routes(), *sources.routes(), *smshook.routes(settings)]
    return [*domains, *api.routes()]
