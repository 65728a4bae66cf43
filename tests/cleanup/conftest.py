"""History for the cleanup tests: checks and data points written straight into their tables."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import pytest

from pulse.db import db
from pulse.models import Component, ExtractedValue, Integration, MetricsQuery, Organization

#: A fixed now, so that every day and hour boundary in these tests is known.
NOW = datetime(2026, 12, 2, 13, 37, 15, tzinfo=UTC)
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


def add_checks(component_id: int, rows: Iterable[tuple[datetime, datetime, str, int | None]]) -> None:
    """Uptime checks of one component: (scheduled at, recorded at, observed status, response ms)."""
    db.execute_sql(
        "INSERT INTO uptime_check (component_id, scheduled_at, checked_at, status_code, response_time_ms, success,"
        " outcome) SELECT %s, s, c, 200, ms, o = 'OPERATIONAL', o"
        " FROM unnest(%s::timestamptz[], %s::timestamptz[], %s::text[], %s::int[]) AS r (s, c, o, ms)",
        (component_id, *map(list, zip(*rows, strict=True))),
    )


def add_points(query_id: int, rows: Iterable[tuple[datetime, datetime, float | None]]) -> None:
    """Data points of one metrics query: (scheduled at, recorded at, value)."""
    db.execute_sql(
        "INSERT INTO metric_data_point (metrics_query_id, scheduled_at, created_at, value)"
        " SELECT %s, s, c, v FROM unnest(%s::timestamptz[], %s::timestamptz[], %s::float8[]) AS r (s, c, v)",
        (query_id, *map(list, zip(*rows, strict=True))),
    )


@pytest.fixture(autouse=True)
def same_partitions(settings):
    """The partitions a test makes are dropped after it: the next one starts with the migration's."""
    from pulse.cleanup import partitions

    before = {table: {p.name for p in partitions.partitions(table)} for table in partitions.TABLES}
    yield
    for table, names in before.items():
        for made in {p.name for p in partitions.partitions(table)} - names:
            db.execute_sql(f"DROP TABLE {made}")


@pytest.fixture
def acme(database):
    return Organization.create(slug="acme", name="Acme")


@pytest.fixture
def component(acme):
    def make(key: str = "api", organization: Organization | None = None) -> Component:
        return Component.create(organization=organization or acme, key=key, name=key.title(), url="https://x.example/")

    return make


@pytest.fixture
def query(acme):
    integration = Integration.create(organization=acme, key="prom", type="prometheus", settings={"url": "http://p"})

    def make(key: str = "p95") -> MetricsQuery:
        return MetricsQuery.create(organization=acme, integration=integration, key=key, name=key, query="up")

    return make


@pytest.fixture
def extracted(component):
    def make(name: str = "latency") -> ExtractedValue:
        return ExtractedValue.create(component=component("ext"), name=name, path="[BODY].latency")

    return make
