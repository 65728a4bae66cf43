from peewee import BigAutoField, CharField, ForeignKeyField, JSONField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.component import Component
from pulse.models.incident import Incident
from pulse.models.organization import Organization

STATUS_CHANGED = "component.status_changed"
INCIDENT_OPENED = "incident.opened"
INCIDENT_RESOLVED = "incident.resolved"
ONCALL_EXHAUSTED = "oncall.exhausted"  # an on-call alert no one acknowledged: for the organization's channels
EVENT_TYPES = (STATUS_CHANGED, INCIDENT_OPENED, INCIDENT_RESOLVED, ONCALL_EXHAUSTED)
ONCALL_PAGE = "oncall.page"  # an on-call alert's pages are its notifications; never broadcast


class Event(BaseModel):
    """Something people may be told about, written in the same transaction as the change (an outbox).

    `sent_at` is set once the event is on the notifications queue; the outbox sweep sends the rest.
    """

    id = BigAutoField()
    organization = ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: int  # the raw ids peewee also exposes, without loading the rows
    component = ForeignKeyField(Component, null=True, on_delete="SET NULL")
    incident = ForeignKeyField(Incident, null=True, on_delete="SET NULL")
    component_id: int | None
    incident_id: int | None
    type = CharField(max_length=64)
    payload = JSONField(default=dict)
    created_at = DateTimeTZField(default=utcnow)
    sent_at = DateTimeTZField(null=True)
