"""``POST /api/v1/components``, and ``PUT``, ``PATCH`` and ``DELETE /api/v1/components/{key}``
(scope ``write``, `pulse.api.writes`): a component made, replaced, changed in part (a JSON merge
patch, RFC 7396) or deleted, by the same spec as the configuration file (`pulse.uptime.spec`), with
its limits and messages, each problem with its JSON path (422), and written as `pulse apply` writes
one (`pulse.uptime.spec.upsert`).

A component the file made is the file's: the API refuses to change or delete it (409) until it is
released (`release`, `pulse components release`); one made through the API is left alone by `pulse
apply` until a file names it, and then it is the file's. A write answers the component as a GET does
(no secret: `pulse.api.components.shown`) with its new ``ETag``, and takes an ``If-Match``.

``ca_file`` is refused: a file is read where `pulse apply` runs, and `pulse serve` reads none for a
client (``ca``, the PEM text, is the API's way). A heartbeat's token is write-only, and kept as its
digest alone: a PATCH of a heartbeat gives it again.
"""

from __future__ import annotations

import re
from typing import Any

import peewee
from pydantic import ValidationError

from pulse.api import audit, components
from pulse.api.auth import Answer, error
from pulse.api.components import ComponentView, shown
from pulse.api.declared import Operation
from pulse.api.writes import IF_MATCH, Change, etag, invalid, matched
from pulse.db import db
from pulse.models import Component, EscalationPolicy, Organization, utcnow
from pulse.spec import SLUG, messages
from pulse.uptime import spec as uptime

OWNER = "api"
CA_FILE = "$.ca_file: a file is read where `pulse apply` runs, not over the API: give ca, the PEM text"


def create(change: Change) -> Answer:
    spec = _spec(change.document)
    if Component.select().where(Component.organization == change.organization_id, Component.key == spec.key).exists():
        raise error(409, f"component {spec.key!r} exists: PUT or PATCH /api/v1/components/{spec.key} changes it")
    row = _write(change.organization_id, spec, None)
    headers = {"ETag": etag(row.id, row.version), "Location": f"/api/v1/components/{row.key}"}
    return Answer(shown(row), status=201, headers=headers)


def replace(change: Change) -> Answer:
    current = _owned(change)
    document = change.document
    if isinstance(document, dict) and "key" not in document:
        document = {"key": current.key, **document}
    return _changed(current, _spec(document))


def patch(change: Change) -> Answer:
    current = _owned(change)
    if not isinstance(change.document, dict):
        raise error(400, "the body must be a JSON object: the fields to change (a JSON merge patch, RFC 7396)")
    return _changed(current, _spec(merged(uptime.document(current), change.document)))


def remove(change: Change) -> Answer:
    current = _owned(change)
    Component.delete().where(Component.id == current.id).execute()
    return Answer(None, status=204)


def release(slug: str, key: str) -> bool:
    """Give component ``key`` of organization ``slug`` to the API: `pulse apply` leaves it alone
    until a file names it again. False when it is the API's already; LookupError when there is none."""
    with db.atomic():
        row = (
            Component.select(Component, Organization)
            .join(Organization)
            .where(Organization.slug == slug, Component.key == key)
            .for_update()
            .first()
        )
        if row is None:
            raise LookupError(f"no component {key!r} in organization {slug!r}")
        if row.owner == OWNER:
            return False
        Component.update(owner=OWNER, version=Component.version + 1).where(Component.id == row.id).execute()
        audit.record(row.organization_id, None, "release", "component", key, 200, utcnow())
    return True


def merged(target: Any, patch: Any) -> Any:
    """``target`` with ``patch`` applied as a JSON merge patch (RFC 7396): a null removes a field,
    an object merges into the field's, any other value replaces it."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = merged(result.get(name), value)
    return result


def _spec(document: Any) -> uptime.ComponentSpec:
    """The component the body declares; 400 for a body that is not an object, 422 listing every
    problem with its JSON path."""
    if not isinstance(document, dict):
        raise error(400, "the body must be a JSON object: a component as the configuration file declares it")
    problems = [CA_FILE] if "ca_file" in document else []
    try:
        spec = uptime.ComponentSpec.model_validate({k: v for k, v in document.items() if k != "ca_file"})
    except ValidationError as e:
        problems += messages(e.errors())
    if problems:
        raise invalid("component", problems)
    return spec


def _owned(change: Change) -> Component:
    """The component the path names, locked for the write: 404 for none, 409 for one the file
    made, 412 when ``If-Match`` names another version of it."""
    key = change.params["key"]
    row = None
    if re.fullmatch(SLUG, key):
        query = Component.select().where(Component.organization == change.organization_id, Component.key == key)
        row = query.for_update().first()
    if row is None:
        raise error(404, f"no component {key[:100]!r}")
    if row.owner != OWNER:
        slug = Organization.get_by_id(change.organization_id).slug
        raise error(
            409,
            f"{slug}/{key} is declared by the configuration file: change it there, "
            f"or release it with `pulse components release {slug} {key}`",
        )
    matched(change.if_match, etag(row.id, row.version), f"component {key!r}")
    return row


def _changed(current: Component, spec: uptime.ComponentSpec) -> Answer:
    if spec.key != current.key:
        problem = f"$.key: is {current.key!r}, as the URL says: a component's key does not change"
        raise invalid("component", [problem])
    row = _write(current.organization_id, spec, current)
    return Answer(shown(row), headers={"ETag": etag(row.id, row.version)})


def _write(organization_id: int, spec: uptime.ComponentSpec, current: Component | None) -> Component:
    policy = None
    if spec.escalation_policy is not None:
        policy = EscalationPolicy.get_or_none(
            EscalationPolicy.organization == organization_id, EscalationPolicy.key == spec.escalation_policy
        )
        if policy is None:
            problem = f"$.escalation_policy: this organization has no escalation policy {spec.escalation_policy!r}"
            raise invalid("component", [problem])
    try:
        with db.atomic():  # a savepoint: the refusal below is answered, the request's transaction rolled back
            uptime.upsert(organization_id, spec, current, None if policy is None else policy.id, owner=OWNER)
    except peewee.IntegrityError as e:
        if "heartbeat_monitor" in str(e):
            problem = "$.token: another heartbeat has this token"
            raise invalid("component", [problem]) from None
        raise error(
            409, f"component {spec.key!r} exists: PUT or PATCH /api/v1/components/{spec.key} changes it"
        ) from None
    return Component.get(Component.organization == organization_id, Component.key == spec.key)


BODY_EXAMPLE = {
    "key": "api",
    "name": "Public API",
    "url": "https://api.acme.example/health",
    "interval": "30s",
    "headers": {"Authorization": "Bearer s3cr3t"},
}
MERGE_PATCH = {
    "type": "object",
    "description": "A JSON merge patch (RFC 7396) of the component: the fields to change, as POST takes them; "
    "null removes one (back to its default), an object merges into the field's.",
}
CREATE = Operation(
    "Make a component, as the configuration file declares one",
    ComponentView,
    status=201,
    body=uptime.ComponentSpec,
    body_refused=("ca_file",),
    refusals=(409,),
    answer_headers=("ETag", "Location"),
    example=components.EXAMPLE,
    body_example=BODY_EXAMPLE,
)
REPLACE = Operation(
    "Replace a component whole",
    ComponentView,
    headers=(IF_MATCH,),
    body=uptime.ComponentSpec,
    body_optional=("key",),
    body_refused=("ca_file",),
    refusals=(404, 409, 412),
    answer_headers=("ETag",),
    example=components.EXAMPLE,
    body_example=BODY_EXAMPLE,
)
PATCH = Operation(
    "Change a component's fields (a JSON merge patch)",
    ComponentView,
    headers=(IF_MATCH,),
    body=MERGE_PATCH,
    refusals=(404, 409, 412),
    answer_headers=("ETag",),
    example=components.EXAMPLE,
    body_example={"interval": "1m", "headers": {"Authorization": None}},
)
REMOVE = Operation("Delete a component", None, status=204, headers=(IF_MATCH,), refusals=(404, 409, 412))
