from typing import Any

from peewee import BigAutoField, CharField, JSONField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow


class Organization(BaseModel):
    """A tenant: every other row belongs to one, directly or through its component."""

    id = BigAutoField()
    slug = CharField(max_length=64, unique=True)
    name = CharField(max_length=200)
    retention = JSONField(default=dict)  # rule -> seconds, what the file sets (`pulse.cleanup.spec`)
    created_at = DateTimeTZField(default=utcnow)


def find_by_key(model: type[BaseModel], name: str, what: str, hint: str = "") -> Any:
    """The ``model`` row (a component, a channel...) named KEY or ORGANIZATION/KEY; LookupError
    says what is wrong, calling it ``what`` (and adding ``hint`` when there is none)."""
    slug, _, key = name.rpartition("/")
    query = model.select(model, Organization).join(Organization).where(model.key == key)  # type: ignore[attr-defined]
    if slug:
        query = query.where(Organization.slug == slug)
    found = list(query.limit(2))
    if not found:
        raise LookupError(f"no {what} {name!r}{hint}")
    if len(found) > 1:
        raise LookupError(f"{key!r} names {what}s of several organizations: use ORGANIZATION/{key}")
    return found[0]
