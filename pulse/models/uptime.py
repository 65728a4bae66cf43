from peewee import BigAutoField, BooleanField, CharField, ForeignKeyField, IntegerField, JSONField, TextField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.component import Component


class UptimeCheck(BaseModel):
    """One HTTP check of one component, unique per scheduled time so a redelivery writes nothing twice."""

    id = BigAutoField()
    component = ForeignKeyField(Component, backref="checks", on_delete="CASCADE")
    scheduled_at = DateTimeTZField()
    started_at = DateTimeTZField(null=True)  # when the request began
    checked_at = DateTimeTZField(default=utcnow)  # when the outcome was recorded
    status_code = IntegerField(null=True)
    response_time_ms = IntegerField(null=True)
    success = BooleanField()
    outcome = CharField(max_length=32)
    error = TextField(null=True)
    condition_results = JSONField(default=list)

    class Meta:
        indexes = ((("component", "scheduled_at"), True),)
