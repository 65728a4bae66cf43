from peewee import (
    BigAutoField,
    BigIntegerField,
    BooleanField,
    CharField,
    ForeignKeyField,
    IntegerField,
    JSONField,
    TextField,
)
from playhouse.postgres_ext import ArrayField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.event import Event
from pulse.models.oncall import Person
from pulse.models.organization import Organization

PENDING, SENDING, SENT, FAILED = "pending", "sending", "sent", "failed"
CANCELLED = "cancelled"  # an on-call page its alert's acknowledgement or resolution made unneeded


class NotificationChannel(BaseModel):
    """An organization's destination: a Slack, Discord or Teams webhook, a generic webhook, an
    email list, a phone number. ``settings`` holds its URL, recipients and secrets; ``events`` and
    ``component_ids`` filter what it receives (empty: everything)."""

    id = BigAutoField()
    organization = ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: int
    key = CharField(max_length=64)
    type = CharField(max_length=16)
    settings = JSONField(default=dict)
    events = ArrayField(TextField, default=list)
    component_ids = ArrayField(BigIntegerField, default=list)
    enabled = BooleanField(default=True)
    last_error = TextField(null=True)
    last_error_at = DateTimeTZField(null=True)
    owner = CharField(max_length=8, default="file")  # who writes it: "file" (pulse apply) or "api" (pulse.api)
    version = IntegerField(default=1)  # counts the writes of its configuration: the API's ETag
    created_at = DateTimeTZField(default=utcnow)
    updated_at = DateTimeTZField(default=utcnow)


class Subscriber(BaseModel):
    """A person or system that asked to be told: an email address, a phone number, a webhook URL
    or a Web Push subscription (its endpoint is the address, its keys are in ``settings``)."""

    id = BigAutoField()
    organization = ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: int
    kind = CharField(max_length=16)
    address = TextField()
    settings = JSONField(default=dict)
    events = ArrayField(TextField, default=list)
    component_ids = ArrayField(BigIntegerField, default=list)
    last_error = TextField(null=True)
    last_error_at = DateTimeTZField(null=True)
    gone_at = DateTimeTZField(null=True)  # its subscription is gone (a push service's 404 or 410): sent nothing
    owner = CharField(max_length=8, default="file")  # who writes it: "file" (pulse apply) or "api" (pulse.api)
    version = IntegerField(default=1)  # counts the writes of its configuration: the API's ETag
    created_at = DateTimeTZField(default=utcnow)


class Notification(BaseModel):
    """One delivery of one event to one destination; ``key`` ("c<channel id>" or "s<subscriber
    id>") is unique per event, so a broadcast run twice creates it once. ``destination`` says where
    without any secret."""

    id = BigAutoField()
    event = ForeignKeyField(Event, on_delete="CASCADE")
    event_id: int
    organization = ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: int
    channel = ForeignKeyField(NotificationChannel, null=True, on_delete="SET NULL")
    channel_id: int | None
    subscriber = ForeignKeyField(Subscriber, null=True, on_delete="SET NULL")
    subscriber_id: int | None
    person = ForeignKeyField(Person, null=True, on_delete="SET NULL")  # an on-call page
    person_id: int | None
    key = CharField(max_length=32)
    kind = CharField(max_length=16)
    destination = TextField()
    link = TextField(null=True)  # the link its message carries instead of the event's (a page's acknowledgement)
    reply_code = CharField(max_length=8, null=True)  # the code a reply to its message gives (an SMS page's)
    status = CharField(max_length=16, default=PENDING)
    attempts = IntegerField(default=0)
    claimed_by = CharField(max_length=64, null=True)
    claimed_at = DateTimeTZField(null=True)
    last_error = TextField(null=True)
    reference = TextField(null=True)  # the provider's id for the message, when it gives one
    duration_ms = IntegerField(null=True)
    created_at = DateTimeTZField(default=utcnow)
    sent_at = DateTimeTZField(null=True)
