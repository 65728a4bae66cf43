"""The service's Prometheus metrics, in a registry of its own (one process):

- ``inbound_requests_total{route,code}``: requests answered, by route template (``-`` for a path no
  route serves) and HTTP status;
- ``inbound_request_seconds{route}``: the time from the request's start to its response's end,
  buckets 5 ms to 10 s;
- ``inbound_connections_closed_total{reason}``: connections refused or closed to keep within the
  service's bounds (`pulse.inbound.closings` lists the reasons).

They are served at ``/metrics`` on the telemetry port only (``PULSE_SERVE_METRICS_HOST`` and
``PULSE_SERVE_METRICS_PORT``, loopback by default), never on the public one.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class Telemetry:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "inbound_requests", "Requests answered, by route and status.", ["route", "code"], registry=self.registry
        )
        self.seconds = Histogram(
            "inbound_request_seconds", "Time to answer a request.", ["route"], buckets=BUCKETS_S, registry=self.registry
        )
        self.closed = Counter(
            "inbound_connections_closed",
            "Connections refused or closed to keep within the bounds, by reason.",
            ["reason"],
            registry=self.registry,
        )

    def observe(self, route: str, code: int, seconds: float) -> None:
        self.requests.labels(route, str(code)).inc()
        self.seconds.labels(route).observe(seconds)

    async def endpoint(self, request: Request) -> Response:
        if request.url.path != "/metrics":
            return PlainTextResponse("Not Found", status_code=404)
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)
