from peewee import BigAutoField, CharField, DoubleField, ForeignKeyField, IntegerField, TextField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.component import Component
from pulse.models.extracted import ExtractedValue
from pulse.models.metrics import MetricsQuery
from pulse.models.organization import Organization

# The states of a calculated metric beyond a query's (`pulse.models.metrics`): an input older than
# its ``max_age``.
STALE = "stale"


class CalculatedMetric(BaseModel):
    """A formula over variables (`CalculatedMetricVariable`), evaluated when an input changes; its
    thresholds may drive a component's status, as a metrics query's do.

    ``pending_since``, ``due_at`` and ``sent_at`` hold the coalescing of its evaluations
    (`pulse.calculated.due`); ``last_value_at`` is the time of the oldest input of the last value.
    """

    id = BigAutoField()
    organization = ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: int
    component = ForeignKeyField(Component, null=True, on_delete="SET NULL")
    component_id: int | None
    key = CharField(max_length=64)
    name = CharField(max_length=200)
    formula = TextField()
    unit = CharField(max_length=32, default="")
    max_age_seconds = IntegerField()
    direction = CharField(max_length=8, default="above")
    warning = DoubleField(null=True)
    critical = DoubleField(null=True)
    critical_status = CharField(max_length=32, default="MAJOR_OUTAGE")
    for_count = IntegerField(default=1)
    recover_count = IntegerField(default=1)
    no_data = CharField(max_length=16, default="keep")
    pending_since = DateTimeTZField(null=True)
    due_at = DateTimeTZField(null=True)
    sent_at = DateTimeTZField(null=True)
    state = CharField(max_length=16, default="unknown")
    last_value = DoubleField(null=True)
    last_value_at = DateTimeTZField(null=True)
    last_note = TextField(null=True)
    last_evaluated_at = DateTimeTZField(null=True)
    owner = CharField(max_length=8, default="file")  # who writes it: "file" (pulse apply) or "api" (pulse.api)
    version = IntegerField(default=1)  # counts the writes of its configuration: the API's ETag
    created_at = DateTimeTZField(default=utcnow)
    updated_at = DateTimeTZField(default=utcnow)


class CalculatedMetricVariable(BaseModel):
    """One variable of a formula and its source: exactly one of a metrics query, an extracted
    value, or another calculated metric."""

    id = BigAutoField()
    calculated_metric = ForeignKeyField(CalculatedMetric, backref="variables", on_delete="CASCADE")
    calculated_metric_id: int
    name = CharField(max_length=64)
    metrics_query = ForeignKeyField(MetricsQuery, null=True, on_delete="CASCADE")
    metrics_query_id: int | None
    extracted_value = ForeignKeyField(ExtractedValue, null=True, on_delete="CASCADE")
    extracted_value_id: int | None
    calculated_input = ForeignKeyField(CalculatedMetric, null=True, on_delete="CASCADE", backref="dependents")
    calculated_input_id: int | None


class CalculatedMetricDataPoint(BaseModel):
    """One evaluation: unique per time it came due, so a redelivered message writes nothing twice.
    ``value`` is None when the formula had no value; ``note`` says why."""

    id = BigAutoField()
    calculated_metric = ForeignKeyField(CalculatedMetric, on_delete="CASCADE")
    calculated_metric_id: int
    scheduled_at = DateTimeTZField()
    value = DoubleField(null=True)
    note = TextField(null=True)
    created_at = DateTimeTZField(default=utcnow)
