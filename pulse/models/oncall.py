from peewee import BigAutoField, CharField, ForeignKeyField, IntegerField, JSONField, TextField
from playhouse.postgres_ext import ArrayField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.organization import Organization

#: The contact kinds a page can use (each a channel kind), and the person's field with its address.
CONTACTS = {"sms": "phone", "email": "email", "push": "push"}


class Person(BaseModel):
    """Someone who can be paged: how to reach them (an email address, an E.164 phone number, a Web
    Push subscription ``{endpoint, keys}``) and their own time zone, for display."""

    id = BigAutoField()
    organization = ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: int
    key = CharField(max_length=64)
    name = CharField(max_length=200)
    email = CharField(max_length=320, null=True)
    phone = CharField(max_length=16, null=True)
    push = JSONField(null=True)
    time_zone = CharField(max_length=64, default="UTC")
    owner = CharField(max_length=8, default="file")  # who writes it: "file" (pulse apply) or "api" (pulse.api)
    version = IntegerField(default=1)  # counts the writes of its configuration: the API's ETag
    created_at = DateTimeTZField(default=utcnow)
    updated_at = DateTimeTZField(default=utcnow)


class OnCallSchedule(BaseModel):
    """Who is on call, as layers of rotations and overrides in one time zone. ``layers`` and
    ``overrides`` are kept as the configuration file writes them, by person key; `pulse.oncall.
    schedules.schedule` reads them into the `pulse.oncall.rotation.Schedule` that says who is on call."""

    id = BigAutoField()
    organization = ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: int
    key = CharField(max_length=64)
    name = CharField(max_length=200)
    time_zone = CharField(max_length=64)
    layers = JSONField(default=list)
    overrides = JSONField(default=list)
    owner = CharField(max_length=8, default="file")  # who writes it: "file" (pulse apply) or "api" (pulse.api)
    version = IntegerField(default=1)  # counts the writes of its configuration: the API's ETag
    created_at = DateTimeTZField(default=utcnow)
    updated_at = DateTimeTZField(default=utcnow)

    class Meta:
        table_name = "oncall_schedule"


class EscalationPolicy(BaseModel):
    """Who is paged, in which order, until someone acknowledges: ``levels`` is a list of
    ``{"targets": [{"person": key} | {"schedule": key}, ...], "wait_seconds": n}``; after the last
    level the policy runs again ``repeat`` more times. ``contact`` lists the channels each page
    uses ("sms", "email", "push")."""

    id = BigAutoField()
    organization = ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: int
    key = CharField(max_length=64)
    name = CharField(max_length=200)
    levels = JSONField()
    repeat = IntegerField(default=0)
    contact = ArrayField(TextField)
    ack_reminder_seconds = IntegerField(null=True)  # remind whoever acknowledged, this often until resolved
    owner = CharField(max_length=8, default="file")  # who writes it: "file" (pulse apply) or "api" (pulse.api)
    version = IntegerField(default=1)  # counts the writes of its configuration: the API's ETag
    created_at = DateTimeTZField(default=utcnow)
    updated_at = DateTimeTZField(default=utcnow)
