"""Drill 11: a metrics worker SIGKILLed with polls waiting on the vendor.

"Nothing lost, nothing doubled" here: after a new worker starts, every poll sent is recorded
exactly once (one data point per query and slot, though the polls cut off are asked again), and
each component a critical value drives changes once: one status change and one incident each.
"""

from collections import Counter
from datetime import timedelta

from actors.metrics import poll
from pulse import configfile
from pulse.models import Event, MetricDataPoint, MetricsQuery, utcnow
from pulse.models.event import INCIDENT_OPENED, STATUS_CHANGED
from tests.support.newrelic import NewRelic
from tests.support.wait import wait_for

QUERIES, SLOTS, THREADS = 20, 5, 8
NRQL = "SELECT average(duration) FROM Transaction"


def organization(newrelic):
    components = "\n".join(f"      - {{key: c{i}, name: C{i}, type: metric}}" for i in range(QUERIES))
    metrics = "\n".join(
        f"      - {{key: m{i}, name: M{i}, integration: nr, query: {NRQL!r}, thresholds: {{critical: 800}}, "
        f"component: c{i}}}"
        for i in range(QUERIES)
    )
    return f"""
organizations:
  - slug: acme
    name: Acme
    components:
{components}
    integrations:
      - {{key: nr, type: newrelic, url: "{newrelic.url}", account_id: {newrelic.account_id},
         api_key: "{newrelic.api_key}"}}
    metrics:
{metrics}
"""


def test_a_killed_worker_loses_no_poll_and_doubles_no_change(workers):
    with NewRelic(concurrency=100) as newrelic:
        newrelic.results[NRQL] = [{"average.duration": 950.0}]
        configfile.apply(configfile.load(organization(newrelic)))
        MetricsQuery.update(next_poll_at=utcnow() + timedelta(days=1)).execute()  # the polls are sent here
        start = utcnow().replace(microsecond=0) - timedelta(hours=1)
        slots = [start + timedelta(seconds=60 * n) for n in range(SLOTS)]
        first = workers(threads=THREADS)
        for slot in slots:
            for query in MetricsQuery.select():
                poll.send(query.id, slot.isoformat())
        wait_for(lambda: MetricDataPoint.select().count() >= QUERIES, "a first round of polls")

        newrelic.gate.clear()  # the next polls wait on the vendor...
        wait_for(lambda: newrelic.in_flight >= THREADS // 2, "polls waiting on the vendor")
        first.kill()  # ...when their worker dies: SIGKILL, messages in flight and prefetched
        recorded_before = MetricDataPoint.select().count()
        newrelic.gate.set()
        workers(threads=THREADS)

        wait_for(lambda: MetricDataPoint.select().count() == QUERIES * SLOTS, "every poll", timeout=90)
        asked = len(newrelic.requests)

    assert recorded_before < QUERIES * SLOTS  # the kill was mid-run
    assert asked >= QUERIES * SLOTS + THREADS // 2  # the polls cut off were asked again
    points = Counter((p.metrics_query_id, p.scheduled_at) for p in MetricDataPoint.select())
    assert set(points) == {(q.id, s) for q in MetricsQuery.select() for s in slots} and max(points.values()) == 1
    changes = Counter((e.component_id, e.type) for e in Event.select())
    assert changes == Counter(
        {(q.component_id, kind): 1 for q in MetricsQuery.select() for kind in (STATUS_CHANGED, INCIDENT_OPENED)}
    )
