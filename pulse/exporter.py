"""The workers' telemetry endpoint as their dramatiq fork runs it: `pulse.telemetry.server` with
every domain's gauges registered. A fork process imports only its function's module (not
`pulse.actors`), so this module is where the domains' gauges are imported, and so registered.
"""

from pulse.cleanup import gauges as cleanup_gauges  # noqa: F401 - registers the cleanup's gauges
from pulse.locations import gauges as location_gauges  # noqa: F401 - registers the locations' gauges
from pulse.oncall import gauges as oncall_gauges  # noqa: F401 - registers on-call's gauge
from pulse.telemetry import server


def serve() -> int:
    """Serve the telemetry of this run's worker processes, every domain's gauges included."""
    return server.serve()
