"""Locations' gauges on the workers' telemetry endpoint (`pulse.telemetry.gauges`), for each
location a component lists or that sent results:

- ``location_last_result_timestamp_seconds{location}``: when its last results came (none before the first);
- ``location_silent{location}``: 1 when a component lists it and it has sent nothing for longer than
  the shortest interval of those components and `SILENCE_GRACE_S` (its workers are gone, or cannot
  reach RabbitMQ), else 0;
- ``location_abstaining{location}``: 1 while its latest results abstained: none of its canaries
  answers (`pulse.locations.canaries`), else 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pulse.telemetry import gauges

if TYPE_CHECKING:
    import psycopg
    from prometheus_client import Metric

#: Beyond the interval, how long a listed location may send nothing before it counts as silent.
SILENCE_GRACE_S = 30

QUERY = """
WITH listed AS (
    SELECT l.name, min(c.interval_seconds) AS every
    FROM component c CROSS JOIN LATERAL unnest(c.locations) AS l (name)
    WHERE c.type = 'ENDPOINT' AND NOT c.paused
    GROUP BY l.name
)
SELECT coalesce(listed.name, h.name), extract(epoch FROM h.last_result_at), h.abstaining_since IS NOT NULL,
       listed.every IS NOT NULL AND (h.last_result_at IS NULL
           OR h.last_result_at < now() - make_interval(secs => listed.every + %(grace)s))
FROM listed FULL JOIN location h ON h.name = listed.name
ORDER BY 1
"""


@gauges.register
def locations(conn: psycopg.Connection[Any]) -> Iterator[Metric]:
    from prometheus_client.core import GaugeMetricFamily

    rows = conn.execute(QUERY, {"grace": SILENCE_GRACE_S}).fetchall()
    last = GaugeMetricFamily(
        "location_last_result_timestamp_seconds",
        "When the location's last results came (Unix time).",
        labels=["location"],
    )
    silent = GaugeMetricFamily(
        "location_silent", "1 when a listed location has sent no result for over an interval.", labels=["location"]
    )
    abstaining = GaugeMetricFamily(
        "location_abstaining", "1 while the location's canaries do not answer: its checks abstain.", labels=["location"]
    )
    for name, last_at, abstains, quiet in rows:
        if last_at is not None:
            last.add_metric([name], float(last_at))
        silent.add_metric([name], 1.0 if quiet else 0.0)
        abstaining.add_metric([name], 1.0 if abstains else 0.0)
    yield from (last, silent, abstaining)
