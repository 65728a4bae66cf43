"""The cleanup's gauges on the workers' telemetry endpoint (`pulse.telemetry.gauges`):

- ``cleanup_last_success_timestamp_seconds``: when the last cleanup succeeded (none before the first);
- ``rollup_lag_seconds{kind}``: how far each kind's rollups are behind now (`pulse.cleanup.rollups`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pulse.telemetry import gauges

if TYPE_CHECKING:
    import psycopg
    from prometheus_client import Metric

QUERY = """
    SELECT (SELECT extract(epoch FROM max(finished_at)) FROM cleanup_run WHERE succeeded),
           (SELECT json_object_agg(kind, extract(epoch FROM now() - watermark)) FROM rollup_state
            WHERE watermark IS NOT NULL)
"""


@gauges.register
def cleanup(conn: psycopg.Connection[Any]) -> Iterator[Metric]:
    from prometheus_client.core import GaugeMetricFamily

    last_success, lags = conn.execute(QUERY).fetchone() or (None, None)
    if last_success is not None:
        success = GaugeMetricFamily(
            "cleanup_last_success_timestamp_seconds", "When the last cleanup succeeded (Unix time)."
        )
        success.add_metric([], float(last_success))
        yield success
    lag = GaugeMetricFamily("rollup_lag_seconds", "How far behind now each kind's rollups are.", labels=["kind"])
    for kind, seconds in sorted((lags or {}).items()):
        lag.add_metric([kind], float(seconds))
    yield lag
