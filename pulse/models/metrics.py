from peewee import (
    BigAutoField,
    BooleanField,
    CharField,
    DoubleField,
    ForeignKeyField,
    IntegerField,
    JSONField,
    TextField,
)

from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.component import Component
from pulse.models.organization import Organization

# What the latest poll of a query said, for `pulse metrics`.
UNKNOWN, OK, WARNING, CRITICAL, NO_DATA = "unknown", "ok", "warning", "critical", "no_data"


class Integration(BaseModel):
    """A monitoring system an organization polls (Prometheus, Datadog, New Relic, Grafana,
    Pingdom); ``settings`` holds its URL or site and its credentials."""

    id = BigAutoField()
    organization = ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: int
    key = CharField(max_length=64)
    type = CharField(max_length=16)
    settings = JSONField(default=dict)
    last_error = TextField(null=True)
    last_error_at = DateTimeTZField(null=True)
    owner = CharField(max_length=8, default="file")  # who writes it: "file" (pulse apply) or "api" (pulse.api)
    version = IntegerField(default=1)  # counts the writes of its configuration: the API's ETag
    created_at = DateTimeTZField(default=utcnow)
    updated_at = DateTimeTZField(default=utcnow)


class MetricsQuery(BaseModel):
    """A query polled on its interval; its thresholds may drive a component's status (at most one
    query per component). Thresholds compare ``direction`` (above or below) with ``warning`` and
    ``critical``; ``for_count`` polls past one before the status changes
    (`pulse.components.thresholds`)."""

    id = BigAutoField()
    organization = ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: int
    integration = ForeignKeyField(Integration, on_delete="CASCADE")
    integration_id: int
    component = ForeignKeyField(Component, null=True, on_delete="SET NULL")
    component_id: int | None
    key = CharField(max_length=64)
    name = CharField(max_length=200)
    query = TextField()
    options = JSONField(default=dict)
    unit = CharField(max_length=32, default="")
    interval_seconds = IntegerField(default=60)
    direction = CharField(max_length=8, default="above")
    warning = DoubleField(null=True)
    critical = DoubleField(null=True)
    critical_status = CharField(max_length=32, default="MAJOR_OUTAGE")
    for_count = IntegerField(default=1)
    recover_count = IntegerField(default=1)
    no_data = CharField(max_length=16, default="keep")
    paused = BooleanField(default=False)
    next_poll_at = DateTimeTZField(null=True)
    state = CharField(max_length=16, default=UNKNOWN)
    last_value = DoubleField(null=True)
    last_value_at = DateTimeTZField(null=True)
    last_polled_at = DateTimeTZField(null=True)  # scheduled time of the latest poll applied
    last_error = TextField(null=True)
    last_error_at = DateTimeTZField(null=True)
    owner = CharField(max_length=8, default="file")  # who writes it: "file" (pulse apply) or "api" (pulse.api)
    version = IntegerField(default=1)  # counts the writes of its configuration: the API's ETag
    created_at = DateTimeTZField(default=utcnow)
    updated_at = DateTimeTZField(default=utcnow)


class MetricDataPoint(BaseModel):
    """One poll of one query: unique per scheduled time, so a redelivered poll writes nothing twice.
    ``value`` is None when the poll found no data."""

    id = BigAutoField()
    metrics_query = ForeignKeyField(MetricsQuery, on_delete="CASCADE")
    metrics_query_id: int
    scheduled_at = DateTimeTZField()
    value = DoubleField(null=True)
    created_at = DateTimeTZField(default=utcnow)
