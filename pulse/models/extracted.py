from peewee import BigAutoField, CharField, DoubleField, ForeignKeyField, TextField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.component import Component


class ExtractedValue(BaseModel):
    """A number a component's checks pull out of the JSON body, for calculated metrics."""

    id = BigAutoField()
    component = ForeignKeyField(Component, backref="extracted_values", on_delete="CASCADE")
    name = CharField(max_length=64)
    path = TextField()
    last_value = DoubleField(null=True)
    last_at = DateTimeTZField(null=True)

    class Meta:
        indexes = ((("component", "name"), True),)


class ExtractedValueDataPoint(BaseModel):
    """One value of one check: unique per scheduled time, like the check itself."""

    id = BigAutoField()
    extracted_value = ForeignKeyField(ExtractedValue, backref="data_points", on_delete="CASCADE")
    value = DoubleField()
    scheduled_at = DateTimeTZField()
    created_at = DateTimeTZField(default=utcnow)

    class Meta:
        indexes = ((("extracted_value", "scheduled_at"), True),)
