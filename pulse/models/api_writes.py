from datetime import timedelta

from peewee import BigAutoField, BlobField, CharField, CompositeKey, ForeignKeyField, IntegerField, JSONField, TextField

from pulse.models.api_token import ApiToken
from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.organization import Organization

KEY_LIFETIME = timedelta(hours=24)  # an Idempotency-Key is honoured this long after its first use, then deleted


class ApiIdempotency(BaseModel):
    """A token's ``Idempotency-Key`` (`pulse.api.writes`): the digest of the request that used it
    and, once it wrote, the answer it got (status, headers, body), which a retry is given again."""

    token = ForeignKeyField(ApiToken, on_delete="CASCADE")
    key = TextField()
    request_sha256 = BlobField()
    status = IntegerField(null=True)
    headers = JSONField(null=True)
    body = JSONField(null=True)
    created_at = DateTimeTZField(default=utcnow)

    class Meta:
        primary_key = CompositeKey("token", "key")


class ApiAudit(BaseModel):
    """One write through the API (or `pulse components release`, with no token): what it did to
    which object, when, and the status answered."""

    id = BigAutoField()
    organization = ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: int
    token = ForeignKeyField(ApiToken, null=True, on_delete="SET NULL")
    token_id: int | None
    action = CharField(max_length=16)
    object_type = CharField(max_length=32)
    object_key = TextField()
    status = IntegerField()
    at = DateTimeTZField(default=utcnow)
