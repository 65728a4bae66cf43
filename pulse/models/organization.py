from peewee import BigAutoField, CharField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow


class Organization(BaseModel):
    """A tenant: every other row belongs to one, directly or through its component."""

    id = BigAutoField()
    slug = CharField(max_length=64, unique=True)
    name = CharField(max_length=200)
    created_at = DateTimeTZField(default=utcnow)
