"""On-call's gauge on the workers' telemetry endpoint (`pulse.telemetry.gauges`):
``oncall_escalations_overdue``, the escalations overdue by more than a minute (`pulse.oncall.due`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pulse.oncall.due import OVERDUE_COUNT
from pulse.telemetry import gauges

if TYPE_CHECKING:
    import psycopg
    from prometheus_client import Metric


@gauges.register
def overdue(conn: psycopg.Connection[Any]) -> Iterator[Metric]:
    from prometheus_client.core import GaugeMetricFamily

    (count,) = conn.execute(OVERDUE_COUNT).fetchone() or (0,)
    family = GaugeMetricFamily(
        "oncall_escalations_overdue", "On-call escalations still not done a minute after their time."
    )
    family.add_metric([], count)
    yield family
