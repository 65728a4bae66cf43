"""The API's routes under ``/api/v1`` (`pulse.app` serves them), each with the scope a token needs
(``write`` for what the file declares, ``incidents`` and ``oncall`` for `pulse.api.writes`' other
routes), sharing one rate limiter (one budget per token across
the API), and last, for any other path or method under ``/api/v1``, a JSON 404 or 405 (``Allow``),
as an API client reads; and the OpenAPI document of them all, ``/api/openapi.json`` (`pulse.api.openapi`).
Each route declares what the document says of it (``doc``, ``docs``)."""

from __future__ import annotations

import functools

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route

from pulse.api import alert_writes, alerts, audit, checks, incident_writes, incidents, openapi, organization, uptime
from pulse.api.alert_sources import ALERT_SOURCES
from pulse.api.auth import BURST, RATE_PER_S, api_route, error
from pulse.api.calculated import CALCULATED_METRICS
from pulse.api.channels import CHANNELS
from pulse.api.components import COMPONENTS
from pulse.api.escalation_policies import ESCALATION_POLICIES
from pulse.api.integrations import INTEGRATIONS
from pulse.api.metrics import METRICS
from pulse.api.people import PEOPLE
from pulse.api.resources import PREFIX, Resource
from pulse.api.schedules import ADD_OVERRIDE, SCHEDULES, add_override
from pulse.api.subscribers import SUBSCRIBERS
from pulse.api.writes import write_route
from pulse.inbound.limits import TokenBuckets

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
#: What the configuration file declares that the API reads and writes, by its path under /api/v1.
RESOURCES = {
    resource.plural: resource
    for resource in (
        *(COMPONENTS, CHANNELS, SUBSCRIBERS, INTEGRATIONS, METRICS, CALCULATED_METRICS),
        *(PEOPLE, SCHEDULES, ESCALATION_POLICIES, ALERT_SOURCES),
    )
}


def routes(buckets: TokenBuckets | None = None) -> list[BaseRoute]:
    """Every route of the API.

    Parameters:
      buckets: the rate limiter (default: `pulse.api.auth.RATE_PER_S` a second, `BURST` at once).
    """
    buckets = buckets or TokenBuckets(rate_per_s=RATE_PER_S, burst=BURST)
    served: list[BaseRoute] = [
        api_route(f"{PREFIX}/organization", organization.show, scope="read", buckets=buckets, doc=organization.SHOW),
        # What the configuration file declares, read and written, and an override added to a
        # schedule; then the read side: a component's checks and uptime, incidents, on-call alerts,
        # the audit.
        *(route for resource in RESOURCES.values() for route in _routes(resource, buckets)),
        write_route(
            f"{SCHEDULES.path}/{{key}}/overrides",
            {"POST": add_override},
            object_type=SCHEDULES.name,
            buckets=buckets,
            action="override",
            docs={"POST": ADD_OVERRIDE},
        ),
        api_route(f"{PREFIX}/components/{{key}}/checks", checks.index, scope="read", buckets=buckets, doc=checks.INDEX),
        api_route(f"{PREFIX}/components/{{key}}/uptime", uptime.show, scope="read", buckets=buckets, doc=uptime.SHOW),
        api_route(f"{PREFIX}/incidents", incidents.index, scope="read", buckets=buckets, doc=incidents.INDEX),
        api_route(f"{PREFIX}/incidents/{{id}}", incidents.one, scope="read", buckets=buckets, doc=incidents.ONE),
        api_route(f"{PREFIX}/alerts", alerts.index, scope="read", buckets=buckets, doc=alerts.INDEX),
        api_route(f"{PREFIX}/alerts/{{id}}", alerts.one, scope="read", buckets=buckets, doc=alerts.ONE),
        api_route(f"{PREFIX}/audit", audit.index, scope="read", buckets=buckets, doc=audit.INDEX),
    ]
    served += [
        write_route(
            f"{PREFIX}/incidents",
            {"POST": incident_writes.open_incident},
            object_type="incident",
            buckets=buckets,
            scope=incident_writes.SCOPE,
            docs={"POST": incident_writes.OPEN},
        ),
        write_route(
            f"{PREFIX}/incidents/{{id}}/updates",
            {"POST": incident_writes.post_update},
            object_type="incident",
            buckets=buckets,
            scope=incident_writes.SCOPE,
            action="update",
            docs={"POST": incident_writes.POST_UPDATE},
        ),
    ]
    served += [
        write_route(
            f"{PREFIX}/alerts/{{id}}/{name}",
            {"POST": write},
            object_type="alert",
            buckets=buckets,
            scope=alert_writes.SCOPE,
            action=name,
            docs={"POST": doc},
        )
        for name, write, doc in (
            ("acknowledge", alert_writes.acknowledge, alert_writes.ACKNOWLEDGE),
            ("resolve", alert_writes.resolve, alert_writes.RESOLVE),
        )
    ]

    async def elsewhere(request: Request) -> Response:
        allowed = {m for r in served if r.matches(request.scope)[0] is Match.PARTIAL for m in getattr(r, "methods", ())}
        if allowed:
            shown = ", ".join(m for m in METHODS if m in allowed)
            raise error(405, f"{request.method} is not answered here (Allow: {shown})", headers={"Allow": shown})
        raise error(404, "no such route of the API")

    return [*served, Route(f"{PREFIX}/{{rest:path}}", elsewhere, methods=METHODS), openapi.route(served)]


def _routes(resource: Resource, buckets: TokenBuckets) -> list[BaseRoute]:
    """A resource's listing and its one object (``read``), and their writes (``write``), each
    with what it declares (`pulse.api.resources.Resource.operations`)."""
    one = f"{resource.path}/{{{resource.identifier}}}"
    does = resource.operations
    written = functools.partial(write_route, object_type=resource.name, buckets=buckets)
    return [
        api_route(resource.path, resource.index, scope="read", buckets=buckets, doc=does.index),
        api_route(one, resource.one, scope="read", buckets=buckets, doc=does.one),
        written(resource.path, {"POST": resource.create}, docs={"POST": does.create}),
        written(
            one,
            {"PUT": resource.replace, "PATCH": resource.patch, "DELETE": resource.remove},
            docs={"PUT": does.replace, "PATCH": does.patch, "DELETE": does.remove},
        ),
    ]
