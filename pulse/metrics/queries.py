"""What operators read of metrics: each query's latest poll, an integration by name."""

from __future__ import annotations

from typing import Any

from pulse.models import Integration, MetricsQuery, Organization
from pulse.models.organization import find_by_key


def find_integration(name: str) -> Integration:
    """An integration by KEY, or ORGANIZATION/KEY; LookupError says what is wrong."""
    return find_by_key(Integration, name, "integration")


def overview(organization: str | None = None) -> list[dict[str, Any]]:
    """Every metrics query (of one organization, given its slug): its last value and when, its
    state, the component it drives and its last error. LookupError for an unknown organization."""
    if organization and not Organization.select().where(Organization.slug == organization).exists():
        raise LookupError(f"no organization {organization!r}")
    query = (
        MetricsQuery.select(MetricsQuery, Organization.slug, Integration.key)
        .join(Organization, on=MetricsQuery.organization == Organization.id)
        .switch(MetricsQuery)
        .join(Integration, on=MetricsQuery.integration == Integration.id)
        .order_by(Organization.slug, MetricsQuery.key)
    )
    if organization:
        query = query.where(Organization.slug == organization)
    return [
        {
            "organization": q.organization.slug,
            "key": q.key,
            "name": q.name,
            "integration": q.integration.key,
            "state": q.state,
            "last_value": q.last_value,
            "unit": q.unit,
            "last_value_at": q.last_value_at and q.last_value_at.isoformat(),
            "last_polled_at": q.last_polled_at and q.last_polled_at.isoformat(),
            "last_error": q.last_error,
            "paused": q.paused,
        }
        for q in query
    ]
