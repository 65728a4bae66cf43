"""Metrics queries the drills point at a fake vendor."""

from pulse.models import Integration, MetricsQuery, Organization
from tests.support.newrelic import NewRelic

NRQL = "SELECT count(*) FROM Transaction"


def newrelic_queries(organization: Organization, newrelic: NewRelic, count: int, interval_seconds: int = 15) -> None:
    """An integration `nr` on ``newrelic`` and ``count`` queries of it (m0, m1...), each polled every
    ``interval_seconds`` and answered 42."""
    newrelic.results[NRQL] = [{"count": 42}]
    settings = {"url": newrelic.url, "account_id": newrelic.account_id, "api_key": newrelic.api_key}
    integration = Integration.create(organization=organization, key="nr", type="newrelic", settings=settings)
    same = {
        "organization": organization,
        "integration": integration,
        "query": NRQL,
        "interval_seconds": interval_seconds,
    }
    MetricsQuery.insert_many([{**same, "key": f"m{i}", "name": f"M{i}"} for i in range(count)]).execute()
