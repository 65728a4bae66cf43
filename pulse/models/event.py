from peewee import BigAutoField, CharField, ForeignKeyField, JSONField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.component import Component
from pulse.models.incident import Incident
from pulse.models.organization import Organization

STATUS_CHANGED = "component.status_changed"
INCIDENT_OPENED = "incident.opened"
INCIDENT_RESOLVED = "incident.resolved"
INCIDENT_UPDATED = "incident.updated"  # an update people posted to an open incident (the API)
ONCALL_EXHAUSTED = "oncall.exhausted"  # an on-call alert no one acknowledged: for the organization's channels
COMPONENT_STILL_DOWN = "component.still_down"  # a repeat while an incident stays open: for the channels
CERTIFICATE_EXPIRING = "certificate.expiring"  # a TLS certificate days from expiry: for the channels
DOMAIN_EXPIRING = "domain.expiring"  # a domain's registration days from expiry: for the channels
EVENT_TYPES = (
    STATUS_CHANGED, INCIDENT_OPENED, INCIDENT_UPDATED, INCIDENT_RESOLVED, ONCALL_EXHAUSTED, COMPONENT_STILL_DOWN,
    CERTIFICATE_EXPIRING, DOMAIN_EXPIRING,
)  # fmt: skip
ONCALL_PAGE = "oncall.page"  # an on-call alert's pages are its notifications; never broadcast
ONCALL_REMINDER = "oncall.reminder"  # an acknowledged alert still open, to whoever acknowledged it

# Whom a broadcast of an event tells (`Event.audience`): every matching channel and subscriber, the
# organization's channels only, or no one (the domain that wrote the event addressed its
# notifications itself, to named people).
EVERYONE, CHANNELS_ONLY, ADDRESSED = "everyone", "channels", "addressed"


class Event(BaseModel):
    """Something people may be told about, written in the same transaction as the change (an outbox).

    `sent_at` is set once the event is on the notifications queue; the outbox sweep sends the rest.
    ``audience`` is whom its broadcast tells, as the domain that writes it decides.
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
    audience = CharField(max_length=16, default=EVERYONE)
    created_at = DateTimeTZField(default=utcnow)
    sent_at = DateTimeTZField(null=True)
