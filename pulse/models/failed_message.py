from peewee import BigAutoField, BigIntegerField, CharField, IntegerField, JSONField, TextField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow


class FailedMessage(BaseModel):
    """A message that finally failed: the record behind `pulse dlq`.

    The message itself also sits in its queue's `.XQ`; this row keeps it listable and
    requeueable. One row per message id; a requeued message that fails again updates its row.
    """

    id = BigAutoField()
    message_id = CharField(max_length=64, unique=True)
    queue_name = CharField(max_length=64)
    actor_name = CharField(max_length=128)
    args = JSONField(default=list)
    kwargs = JSONField(default=dict)
    options = JSONField(default=dict)
    message_timestamp = BigIntegerField(null=True)  # milliseconds since the epoch, as dramatiq sets it
    error_type = CharField(max_length=128)
    error_message = TextField()
    traceback = TextField()
    attempts = IntegerField(default=1)
    failed_at = DateTimeTZField(default=utcnow)
    requeued_at = DateTimeTZField(null=True)
    requeue_count = IntegerField(default=0)
