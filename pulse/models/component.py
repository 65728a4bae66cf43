from peewee import BigAutoField, BooleanField, CharField, ForeignKeyField, IntegerField, JSONField, TextField
from playhouse.postgres_ext import ArrayField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.oncall import EscalationPolicy
from pulse.models.organization import Organization


class Component(BaseModel):
    """Something whose status a status page shows; an ENDPOINT is checked by its ``kind``
    (`pulse.uptime.kinds`): over HTTP (url, method, headers, forward_headers, body) or by
    another kind, whose fields are in ``target``.

    Intervals are in seconds (15 s to 24 h), timeouts in milliseconds.
    """

    id = BigAutoField()
    organization = ForeignKeyField(Organization, backref="components", on_delete="CASCADE")
    organization_id: int  # the raw id peewee also exposes, without loading the organization
    key = CharField(max_length=64)
    name = CharField(max_length=200)
    type = CharField(max_length=16, default="ENDPOINT")
    status = CharField(max_length=32, default="OPERATIONAL")
    kind = CharField(max_length=16, default="http")  # an endpoint's check kind (pulse.uptime.kinds)
    target = JSONField(null=True)  # the check's fields, for a kind other than http
    url = TextField(null=True)
    method = CharField(max_length=8, default="GET")
    headers = JSONField(default=dict)
    forward_headers = BooleanField(default=False)  # sent on a redirect to another origin too
    body = TextField(null=True)
    interval_seconds = IntegerField(default=60)
    timeout_ms = IntegerField(default=10000)
    conditions = JSONField(default=list)
    failure_threshold = IntegerField(default=3)
    success_threshold = IntegerField(default=2)
    auto_incident = BooleanField(default=True)
    paused = BooleanField(default=False)
    next_check_at = DateTimeTZField(null=True)
    checking_since = DateTimeTZField(null=True)  # the first slot of its grid (pulse.uptime.missed)
    consecutive_failures = IntegerField(default=0)
    consecutive_successes = IntegerField(default=0)
    escalation_policy = ForeignKeyField(EscalationPolicy, null=True, on_delete="SET NULL")  # pages for its incidents
    repeat_seconds = IntegerField(null=True)  # re-notify the channels this often while its incident is open
    certificate_warning_days = ArrayField(IntegerField, default=lambda: [14, 3])  # pulse.uptime.expiry
    domain_warning_days = ArrayField(IntegerField, default=list)  # pulse.uptime.domains; none: no lookups
    domain = TextField(null=True)  # its host's registered domain, when it has domain warnings
    locations = ArrayField(TextField, default=list)  # checked from these (pulse.locations); none: centrally
    quorum = IntegerField(null=True)  # locations that must agree for a verdict; None: a majority
    escalation_policy_id: int | None
    extract = JSONField(default=dict)  # value name -> JSON path into the body, e.g. "[BODY].db.latency_ms"
    last_checked_at = DateTimeTZField(null=True)  # scheduled time of the latest check applied to the status
    last_response_time_ms = IntegerField(null=True)
    status_since = DateTimeTZField(default=utcnow)
    created_at = DateTimeTZField(default=utcnow)
    updated_at = DateTimeTZField(default=utcnow)
    owner = CharField(max_length=8, default="file")  # who writes it: "file" (pulse apply) or "api" (pulse.api)
    version = IntegerField(default=1)  # counts the writes of its configuration: the API's ETag

    class Meta:
        indexes = ((("organization", "key"), True),)


class MaintenanceWindow(BaseModel):
    """While one is open, the component is checked but shows UNDER_MAINTENANCE, silently."""

    id = BigAutoField()
    component = ForeignKeyField(Component, backref="maintenance_windows", on_delete="CASCADE")
    component_id: int
    starts_at = DateTimeTZField()
    ends_at = DateTimeTZField()
    title = CharField(max_length=200, default="")
