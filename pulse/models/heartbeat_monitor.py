from peewee import BigAutoField, BlobField, BooleanField, CharField, ForeignKeyField, IntegerField, SmallIntegerField

from pulse.models.base import BaseModel, DateTimeTZField
from pulse.models.component import Component


class HeartbeatMonitor(BaseModel):
    """A component of type HEARTBEAT: the job it watches pings it at least every period (seconds),
    or after each match of its cron expression in its time zone, within the grace; a ping missing
    past the deadline is a failed observation, and so is a run started that sends no success or
    failure within the grace (`pulse.heartbeats`)."""

    component = ForeignKeyField(Component, primary_key=True, on_delete="CASCADE")
    component_id: int
    token_sha256 = BlobField(unique=True)  # the ping token's SHA-256, never the token
    period_seconds = IntegerField(null=True)  # or a cron expression, one of the two
    cron = CharField(max_length=100, null=True)
    time_zone = CharField(max_length=64, default="UTC")  # the cron expression's, an IANA name
    grace_seconds = IntegerField()
    last_ping_at = DateTimeTZField(null=True)  # latest success or fail ping
    last_start_at = DateTimeTZField(null=True)  # the run in progress: a success or fail ping clears it
    deadline_at = DateTimeTZField(null=True)  # when a missing ping fails; none before the first ping
    pending_at = DateTimeTZField(null=True)  # since when pings wait for a worker to apply them


class HeartbeatPing(BaseModel):
    """One ping as it arrived: its kind, exit status and the first `pulse.heartbeats.ping.BODY_LIMIT`
    bytes of its body; ``applied`` once a worker applied it to the status."""

    id = BigAutoField()
    monitor = ForeignKeyField(HeartbeatMonitor, column_name="component_id", on_delete="CASCADE")
    received_at = DateTimeTZField()
    kind = CharField(max_length=8)
    exit_status = SmallIntegerField(null=True)
    body = BlobField()
    applied = BooleanField()
