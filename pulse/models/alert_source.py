from peewee import BigAutoField, BlobField, BooleanField, CharField, ForeignKeyField, IntegerField, JSONField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.organization import Organization

EVENTS, ALERTMANAGER, GRAFANA = "events", "alertmanager", "grafana"
KINDS = (EVENTS, ALERTMANAGER, GRAFANA)
TRIGGER, ACKNOWLEDGE, RESOLVE = "trigger", "acknowledge", "resolve"


class AlertSource(BaseModel):
    """Something that sends alerts in (`pulse.sources`): an events API client, an Alertmanager or a
    Grafana, by ``kind``. ``routes`` is a list of ``{"match": {label: value}, "policy": key}``, the
    first that matches an alert's labels naming its escalation policy (the last matches anything);
    ``pending_at`` is since when events wait for a worker to apply them. ``signature`` is how a
    grafana source signs its requests (`pulse.sources.signature`; its secret in clear, as Pulse
    needs it to check them), or None."""

    id = BigAutoField()
    organization = ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: int
    key = CharField(max_length=64)
    name = CharField(max_length=200)
    kind = CharField(max_length=16)
    token_sha256 = BlobField(unique=True)  # the token's SHA-256, never the token
    routes = JSONField()
    signature = JSONField(null=True)
    pending_at = DateTimeTZField(null=True)
    owner = CharField(max_length=8, default="file")  # who writes it: "file" (pulse apply) or "api" (pulse.api)
    version = IntegerField(default=1)  # counts the writes of its configuration: the API's ETag
    created_at = DateTimeTZField(default=utcnow)
    updated_at = DateTimeTZField(default=utcnow)

    class Meta:
        table_name = "alert_source"


class AlertEvent(BaseModel):
    """One event as it arrived from a source: a trigger, acknowledge or resolve of the alert whose
    key is ``dedup_key``; ``applied`` once a worker applied it to the on-call alerts."""

    id = BigAutoField()
    source = ForeignKeyField(AlertSource, on_delete="CASCADE")
    source_id: int
    received_at = DateTimeTZField()
    action = CharField(max_length=16)
    dedup_key = CharField(max_length=255)
    summary = CharField(max_length=1024)
    severity = CharField(max_length=16)
    labels = JSONField()
    details = JSONField()
    applied = BooleanField(default=False)

    class Meta:
        table_name = "alert_event"
