from peewee import BigAutoField, CharField, ForeignKeyField, IntegerField, JSONField, TextField

from pulse.models.alert_source import AlertSource
from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.component import Component
from pulse.models.event import Event
from pulse.models.incident import Incident
from pulse.models.notification import Notification
from pulse.models.oncall import Person
from pulse.models.organization import Organization

TRIGGERED, ACKNOWLEDGED, RESOLVED, EXHAUSTED = "triggered", "acknowledged", "resolved", "exhausted"


class OnCallAlert(BaseModel):
    """The paging of one incident (unique), or of one alert of a source (its ``dedup_key``: at most
    one open per key): ``title`` says what it is about; ``policy`` is the component's escalation policy frozen
    as it was when the alert opened (``{key, name, levels, repeat, contact, ack_reminder_seconds}``, as
    `pulse.models.EscalationPolicy` holds them). ``level`` and ``round`` (from 1) are what was paged
    last; ``next_escalation_at`` is when the next level is due, while the alert is triggered;
    ``escalation_sent_at`` is when the loop sent its escalation. ``event`` is the alert's page
    event: every page is a notification of it."""

    id = BigAutoField()
    organization = ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: int
    incident = ForeignKeyField(Incident, unique=True, null=True, on_delete="CASCADE")
    incident_id: int | None
    source = ForeignKeyField(AlertSource, null=True, on_delete="CASCADE")
    source_id: int | None
    dedup_key = CharField(max_length=255, null=True)
    title = CharField(max_length=1024, default="")
    component = ForeignKeyField(Component, null=True, on_delete="SET NULL")
    component_id: int | None
    event = ForeignKeyField(Event, on_delete="CASCADE")
    event_id: int
    policy = JSONField()
    status = CharField(max_length=16, default=TRIGGERED)
    level = IntegerField(default=0)
    round = IntegerField(default=1)
    next_escalation_at = DateTimeTZField(null=True)
    escalation_sent_at = DateTimeTZField(null=True)
    acknowledged_by = CharField(max_length=64, null=True)
    acknowledged_via = CharField(max_length=16, null=True)
    acknowledged_at = DateTimeTZField(null=True)
    resolved_at = DateTimeTZField(null=True)
    reminders = IntegerField(default=0)  # reminders sent since the acknowledgement (`pulse.oncall.reminders`)
    created_at = DateTimeTZField(default=utcnow)
    updated_at = DateTimeTZField(default=utcnow)

    class Meta:
        table_name = "oncall_alert"


class OnCallTimeline(BaseModel):
    """One step of an alert: ``kind`` is "opened", "paged" (``person`` on ``channel``), "skipped"
    (a level with no one to page), "escalated", "acknowledged", "exhausted" or "resolved"; ``note``
    says it in words."""

    id = BigAutoField()
    alert = ForeignKeyField(OnCallAlert, backref="timeline", on_delete="CASCADE")
    alert_id: int
    at = DateTimeTZField()
    kind = CharField(max_length=16)
    level = IntegerField(null=True)
    round = IntegerField(null=True)
    person = CharField(max_length=64, null=True)
    channel = CharField(max_length=16, null=True)
    note = TextField(default="")

    class Meta:
        table_name = "oncall_timeline"


class OnCallReplyCode(BaseModel):
    """The code an SMS page asks a reply with (`pulse.oncall.replies`): sent to ``phone`` for
    ``person``, it acknowledges ``alert`` while the alert escalates (is triggered); the reply
    that used it is Twilio's message ``message_sid``, answered ``answer``."""

    id = BigAutoField()
    notification = ForeignKeyField(Notification, unique=True, on_delete="CASCADE")
    notification_id: int
    alert = ForeignKeyField(OnCallAlert, on_delete="CASCADE")
    alert_id: int
    person = ForeignKeyField(Person, on_delete="CASCADE")
    person_id: int
    phone = CharField(max_length=16)
    code = CharField(max_length=8)
    created_at = DateTimeTZField()
    used_at = DateTimeTZField(null=True)
    message_sid = CharField(max_length=64, null=True, unique=True)
    answer = TextField(null=True)

    class Meta:
        table_name = "oncall_reply_code"


class OnCallReplyMiss(BaseModel):
    """The wrong codes a number holding live codes has replied with (`pulse.oncall.smshook`):
    ``misses`` since ``since``, counted anew after a day; shared by every process."""

    phone = CharField(max_length=16, primary_key=True)
    since = DateTimeTZField()
    misses = IntegerField()

    class Meta:
        table_name = "oncall_reply_miss"
