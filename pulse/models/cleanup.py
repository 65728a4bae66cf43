from peewee import BigAutoField, BooleanField, JSONField, TextField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow


class CleanupRun(BaseModel):
    """One cleanup (`pulse.cleanup.run`), over one or more messages: ``deleted`` counts the rows
    per table; ``succeeded`` is None while it runs (or after a crash), False when it failed
    (``error`` says why)."""

    id = BigAutoField()
    started_at = DateTimeTZField(default=utcnow)
    finished_at = DateTimeTZField(null=True)
    succeeded = BooleanField(null=True)
    deleted = JSONField(default=dict)
    error = TextField(null=True)

    class Meta:
        table_name = "cleanup_run"
