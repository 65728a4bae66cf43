from peewee import BigIntegerField, BooleanField, CharField, CompositeKey, DoubleField, ForeignKeyField, IntegerField

from pulse.models.base import BaseModel, DateTimeTZField
from pulse.models.calculated import CalculatedMetric
from pulse.models.component import Component
from pulse.models.extracted import ExtractedValue
from pulse.models.metrics import MetricsQuery

HOUR, DAY = "hour", "day"


class ComponentRollup(BaseModel):
    """A component's checks in one hour or one UTC day (``period``), from ``start``: ``checks`` =
    ``operational`` + ``degraded`` + ``outage`` (what each observed), ``maintenance`` those scheduled
    in a maintenance window; ``unknown`` the slots nobody checked (`pulse.uptime.missed`), apart
    from the checks; response times of the ``responses`` that had one. Written by
    `pulse.cleanup.rollups`, never by hand."""

    component = ForeignKeyField(Component, on_delete="CASCADE")
    component_id: int
    period = CharField(max_length=4)
    start = DateTimeTZField()
    checks = IntegerField()
    operational = IntegerField()
    degraded = IntegerField()
    outage = IntegerField()
    maintenance = IntegerField()
    unknown = IntegerField(default=0)
    responses = IntegerField()
    response_ms_sum = BigIntegerField()
    avg_ms = DoubleField(null=True)  # generated: response_ms_sum / responses
    p95_ms = IntegerField(null=True)
    max_ms = IntegerField(null=True)
    p95_pending = BooleanField(default=False)  # a day's p95 is computed once the day is over

    class Meta:
        table_name = "component_rollup"
        primary_key = CompositeKey("component", "period", "start")


class SeriesRollup(BaseModel):
    """The values of one series in one hour or UTC day: ``points`` recorded, ``count`` of them
    with a value, and those values' ``min``, ``max``, ``sum``, ``avg`` and ``last`` (at ``last_at``)."""

    period = CharField(max_length=4)
    start = DateTimeTZField()
    points = IntegerField()
    count = IntegerField()
    min = DoubleField(null=True)
    max = DoubleField(null=True)
    sum = DoubleField()
    avg = DoubleField(null=True)  # generated: sum / count
    last = DoubleField(null=True)
    last_at = DateTimeTZField(null=True)


class MetricRollup(SeriesRollup):
    metrics_query = ForeignKeyField(MetricsQuery, on_delete="CASCADE")

    class Meta:
        table_name = "metric_rollup"
        primary_key = CompositeKey("metrics_query", "period", "start")


class ExtractedRollup(SeriesRollup):
    extracted_value = ForeignKeyField(ExtractedValue, on_delete="CASCADE")

    class Meta:
        table_name = "extracted_rollup"
        primary_key = CompositeKey("extracted_value", "period", "start")


class CalculatedRollup(SeriesRollup):
    calculated_metric = ForeignKeyField(CalculatedMetric, on_delete="CASCADE")

    class Meta:
        table_name = "calculated_rollup"
        primary_key = CompositeKey("calculated_metric", "period", "start")


class RollupState(BaseModel):
    """How far the rollups of one kind have read: every raw row recorded at or before
    ``watermark`` is in them (None: nothing rolled up yet)."""

    kind = CharField(max_length=16, primary_key=True)
    watermark = DateTimeTZField(null=True)
    updated_at = DateTimeTZField()

    class Meta:
        table_name = "rollup_state"
