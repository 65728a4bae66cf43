from peewee import BigAutoField, BlobField, CharField, ForeignKeyField, TextField
from playhouse.postgres_ext import ArrayField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow
from pulse.models.organization import Organization

#: What a token may be allowed, each a set of routes of `pulse.api` (docs/api.md).
SCOPES = ("read", "write", "incidents", "oncall")


class ApiToken(BaseModel):
    """A token of the API (`pulse.api`): its organization's rows are all it reaches, through the
    routes its ``scopes`` allow. Only the token's SHA-256 digest is kept (`pulse.inbound.tokens.digest`)."""

    id = BigAutoField()
    organization = ForeignKeyField(Organization, backref="api_tokens", on_delete="CASCADE")
    organization_id: int
    name = CharField(max_length=200, default="")
    scopes = ArrayField(TextField)
    token_sha256 = BlobField(unique=True)
    created_at = DateTimeTZField(default=utcnow)
    expires_at = DateTimeTZField(null=True)
    revoked_at = DateTimeTZField(null=True)
    last_used_at = DateTimeTZField(null=True)  # written at most once a minute (pulse.api.auth)
