from peewee import BigAutoField, BooleanField, CharField, ForeignKeyField, IntegerField, TextField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.component import Component
from pulse.models.organization import Organization

# The stages of an incident, as a status page shows them.
INVESTIGATING, IDENTIFIED, MONITORING, RESOLVED = "INVESTIGATING", "IDENTIFIED", "MONITORING", "RESOLVED"


class Incident(BaseModel):
    """An incident, opened and resolved automatically or by people.

    A component has at most one open incident (a partial unique index enforces it).
    """

    id = BigAutoField()
    organization = ForeignKeyField(Organization, backref="incidents", on_delete="CASCADE")
    component = ForeignKeyField(Component, backref="incidents", null=True, on_delete="SET NULL")
    organization_id: int  # the raw ids peewee also exposes, without loading the rows
    component_id: int | None
    title = CharField(max_length=300)
    status = CharField(max_length=16, default=INVESTIGATING)
    impact = CharField(max_length=32, default="MAJOR_OUTAGE")
    automatic = BooleanField(default=False)
    started_at = DateTimeTZField(default=utcnow)
    resolved_at = DateTimeTZField(null=True)
    repeats = IntegerField(default=0)  # repeat notifications sent while it is open (`pulse.components.repeats`)


class IncidentUpdate(BaseModel):
    """One entry of an incident's timeline."""

    id = BigAutoField()
    incident = ForeignKeyField(Incident, backref="updates", on_delete="CASCADE")
    status = CharField(max_length=16)
    message = TextField()
    created_at = DateTimeTZField(default=utcnow)
