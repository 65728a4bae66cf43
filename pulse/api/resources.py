"""What the configuration file declares, over the API: one `Resource` a kind of object (a
component, a channel, a subscriber), read (scope ``read``: a listing a page at a time, by its
identifier, filtered; one) and written (scope ``write``, `pulse.api.writes`: ``POST``, and ``PUT``,
``PATCH``, a JSON merge patch, RFC 7396, and ``DELETE`` of one) by the same spec as the file, with
its limits and messages, each problem with its JSON path (422).

An object the file made is the file's: the API refuses to change or delete it (409) until it is
released (`Resource.release`: ``pulse components release``, ``pulse channels release``...); one
made through the API is left alone by `pulse apply` until a file names it, and then it is the
file's. A write answers the object as a GET does, with its new ``ETag``, and takes an ``If-Match``.
A reference to another object is by key (`referenced`: 422 naming the path of one the organization
does not have); an object others name is not deleted (409 naming them: ``referrers``).

A secret is write-only: never answered (a resource's ``show`` leaves it out), never repeated in a
problem (`Resource.secrets`). A PATCH is validated whole, as its object's stored document (secrets
read from its row) with the patch merged in: a secret it does not give is kept.

A resource declares its six operations itself (`Resource.operations`, for `pulse.api.openapi`): its
answer's TypedDict (``view``, and ``page`` for a listing), its spec as the body's model (``key``
optional on a PUT, whose URL gives it; the fields it refuses left out), its filters as the query
parameters a listing declares and reads (`Filter`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import peewee
from pydantic import BaseModel, ValidationError

from pulse.api import audit, pages, params
from pulse.api.auth import Answer, Call, error
from pulse.api.declared import Operation
from pulse.api.writes import IF_MATCH, Change, etag, invalid, matched
from pulse.db import db
from pulse.models import Organization, utcnow
from pulse.spec import SLUG, messages

OWNER = "api"
PREFIX = "/api/v1"
# A secret's text this long or longer is never repeated in a problem; a shorter one (a header's
# value "1") would be cut out of every word that holds it, and is too short to be a credential.
SHORTEST_SECRET = 8


@dataclass(frozen=True)
class Filter(params.OneOf):
    """A listing's filter: a `pulse.api.params.OneOf` on ``column``, each value stored as
    ``stored`` maps it (default: as given)."""

    column: Any = field(default=None, compare=False)
    stored: Mapping[str, str] | None = field(default=None, compare=False)

    def where(self, query: Any, asked: Mapping[str, str]) -> Any:
        """``query`` with this filter's condition, when ``asked`` gives it; 400 for a value it does not take."""
        value = self.read(asked)
        if value is None:
            return query
        return query.where(self.column == (value if self.stored is None else self.stored[value]))


@dataclass(frozen=True)
class Named(params.Key):
    """A listing's filter by the key of the object ``column`` refers to, a row of ``model`` (a
    metric's integration)."""

    column: Any = field(default=None, compare=False)
    model: Any = field(default=None, compare=False)

    def where(self, query: Any, asked: Mapping[str, str]) -> Any:
        """``query`` with this filter's condition, when ``asked`` gives it; 400 for a value that
        cannot be a key."""
        value = self.read(asked)
        if value is None:
            return query
        return query.where(self.column.in_(self.model.select(self.model.id).where(self.model.key == value)))


@dataclass(frozen=True)
class Operations:
    """What a resource's routes declare, by what they do."""

    index: Operation
    one: Operation
    create: Operation
    replace: Operation
    patch: Operation
    remove: Operation


@dataclass(frozen=True)
class Resource:
    """One kind of object the configuration file declares, as the API reads and writes it.

    Parameters:
      name: what one is called (``channel``): the audit's object type, and the errors'.
      plural: its path under ``/api/v1`` and its command (``channels``: `pulse channels release`;
        ``alert-sources``), and, with ``_`` for ``-``, its listing's field (``alert_sources``).
      model: its table, with ``organization``, ``owner`` and ``version`` columns.
      identifier: the column a path names one by: ``key``, or ``id`` (a subscriber's address may
        be a secret URL).
      spec: the configuration file's model of one: a write's body.
      view: the TypedDict of one as answered; page: of a listing's page (``{listing: [view],
        next_cursor}``).
      show: rows as answered (no secret), a page of them at once.
      document: a row as the file declares it, its secrets read from the row (for a PATCH; never
        answered).
      write: writes a valid spec as the API's, given the organization and the row it replaces
        (None for a new one), and returns its id; refuses a reference to nothing with `invalid`.
      existing: the organization's row a new spec would collide with (for 409), or None.
      listed: the query of the rows ``show`` reads (default: every column).
      referrers: what names a row, as an error names it (``the schedule 'primary'``, ``metric
        'api-p95'``), read under the row's lock: its DELETE is refused (409) naming them, as long as
        any does, the database cascading it being no answer (default: nothing does).
      filters: a listing's filters, each a query parameter it declares (`Filter`, `Named`).
      secrets: the fields whose texts, at any depth, are secrets: never repeated in a problem.
      refused: fields of the file the API refuses, each with why.
      example, body_example, patch_example: one as answered, a body of a POST and of a PATCH, as
        the OpenAPI document shows them.
    """

    name: str
    plural: str
    model: Any
    identifier: str
    spec: type[BaseModel]
    view: Any
    page: Any
    show: Callable[[list[Any]], list[Any]]
    document: Callable[[Any], dict[str, Any]]
    write: Callable[[int, Any, Any], int]
    existing: Callable[[int, Any], Any]
    listed: Callable[[], Any] | None = None
    referrers: Callable[[Any], list[str]] | None = None
    filters: tuple[Filter | Named, ...] = ()
    secrets: tuple[str, ...] = ()
    refused: Mapping[str, str] = field(default_factory=dict)
    example: Any = None
    body_example: Any = None
    patch_example: Any = None

    @property
    def path(self) -> str:
        return f"{PREFIX}/{self.plural}"

    @property
    def one_called(self) -> str:
        """One, as a sentence names it: ``a channel``, ``an integration``."""
        return f"{'an' if self.name[0] in 'aeiou' else 'a'} {self.name}"

    @property
    def listing(self) -> str:
        """The field of a listing's page that holds its objects: its plural, a name of JSON's."""
        return self.plural.replace("-", "_")

    @property
    def operations(self) -> Operations:
        """What each of its routes declares (`pulse.api.openapi`)."""
        refused = tuple(self.refused)
        written: dict[str, Any] = {"body": self.spec, "body_refused": refused, "body_example": self.body_example}
        changed: dict[str, Any] = {"headers": (IF_MATCH,), "refusals": (404, 409, 412)}
        patch = {
            "type": "object",
            "description": f"A JSON merge patch (RFC 7396) of the {self.name}: the fields to change, as POST takes "
            "them; null removes one (back to its default), an object merges into the field's.",
        }
        return Operations(
            index=Operation(
                f"List the {self.plural.replace('-', ' ')}, by {self.identifier}",
                self.page,
                query=(*pages.QUERY, *self.filters),
                refusals=(400,),
                example={self.listing: [self.example], "next_cursor": "YXBp" if self.identifier == "key" else "MQ"},
            ),
            one=Operation(
                f"{self.one_called.capitalize()}, with its ETag",
                self.view,
                refusals=(404,),
                answer_headers=("ETag",),
                example=self.example,
            ),
            create=Operation(
                f"Make {self.one_called}, as the configuration file declares one",
                self.view,
                status=201,
                refusals=(409,),
                answer_headers=("ETag", "Location"),
                example=self.example,
                **written,
            ),
            replace=Operation(
                f"Replace {self.one_called} whole",
                self.view,
                body_optional=("key",) if self.identifier == "key" else (),
                answer_headers=("ETag",),
                example=self.example,
                **written,
                **changed,
            ),
            patch=Operation(
                f"Change {self.one_called}'s fields (a JSON merge patch)",
                self.view,
                body=patch,
                answer_headers=("ETag",),
                example=self.example,
                body_example=self.patch_example,
                **changed,
            ),
            remove=Operation(f"Delete {self.one_called}", None, status=204, **changed),
        )

    # The reads.

    def index(self, call: Call) -> dict[str, Any]:
        limit = pages.limit(call.query)
        query = self._listed().where(self.model.organization == call.organization_id)
        for kind in self.filters:
            query = kind.where(query, call.query)
        after = pages.after_number(call.query) if self.identifier == "id" else pages.after(call.query)
        if after is not None:
            query = query.where(self._column > after)
        rows, next_cursor = pages.take(query, self._column, limit, self.identifier)
        return {self.listing: self.show(rows), "next_cursor": next_cursor}

    def one(self, call: Call) -> Answer:
        return self._answer(self.named(call.organization_id, call.params[self.identifier]))

    def named(self, organization_id: int, text: str, query: Any = None) -> Any:
        """The row the path's ``text`` names in the organization, from ``query`` (default: as
        listed); else 404."""
        value = self._value(text)
        row = None
        if value is not None:  # a text that cannot be one (a NUL, which PostgreSQL refuses) is not looked up
            query = self._listed() if query is None else query
            row = query.where(self.model.organization == organization_id, self._column == value).first()
        if row is None:
            raise error(404, f"no {self.name} {text[:100]!r}")
        return row

    # The writes.

    def create(self, change: Change) -> Answer:
        spec = self._spec(change.document)
        self._unclaimed(change.organization_id, spec, None)
        row = self._write(change.organization_id, spec, None)
        answer = self._answer(row)
        location = f"{self.path}/{getattr(row, self.identifier)}"
        return Answer(answer.body, status=201, headers={**answer.headers, "Location": location})

    def replace(self, change: Change) -> Answer:
        current = self._owned(change)
        document = change.document
        if self.identifier == "key" and isinstance(document, dict) and "key" not in document:
            document = {"key": current.key, **document}
        return self._changed(change, current, self._spec(document))

    def patch(self, change: Change) -> Answer:
        current = self._owned(change)
        if not isinstance(change.document, dict):
            raise error(400, "the body must be a JSON object: the fields to change (a JSON merge patch, RFC 7396)")
        return self._changed(change, current, self._spec(merged(self.document(current), change.document)))

    def remove(self, change: Change) -> Answer:
        current = self._owned(change)
        self._matched(change, current)
        named_by = self.referrers(current) if self.referrers is not None else []
        if named_by:
            called = self._called(getattr(current, self.identifier))
            raise error(409, f"{called} is named by {' and '.join(named_by)}: change or delete them first")
        self.model.delete().where(self.model.id == current.id).execute()
        return Answer(None, status=204)

    def release(self, slug: str, text: str) -> bool:
        """Give the object ``text`` names in organization ``slug`` to the API: `pulse apply` leaves it
        alone until a file names it again. False when it is the API's already; LookupError when there
        is none."""
        value = self._value(text)
        with db.atomic():
            row = None
            if value is not None:
                query = self.model.select(self.model, Organization).join(Organization)
                row = query.where(Organization.slug == slug, self._column == value).for_update().first()
            if row is None:
                raise LookupError(f"no {self.name} {text!r} in organization {slug!r}")
            if row.owner == OWNER:
                return False
            self.model.update(owner=OWNER, version=self.model.version + 1).where(self.model.id == row.id).execute()
            audit.record(row.organization_id, None, "release", self.name, text, 200, utcnow())
        return True

    # Their parts.

    @property
    def _column(self) -> Any:
        return getattr(self.model, self.identifier)

    def _listed(self) -> Any:
        return self.listed() if self.listed is not None else self.model.select()

    def _value(self, text: str) -> Any:
        """The identifier ``text`` gives, or None when it cannot be one."""
        if self.identifier == "id":
            return params.row_id(text)
        return text if re.fullmatch(SLUG, text) else None

    def _called(self, value: Any) -> str:
        """An object as an error names it: ``component 'api'``, ``subscriber 7``."""
        return f"{self.name} {value!r}" if isinstance(value, str) else f"{self.name} {value}"

    def _spec(self, document: Any) -> Any:
        """What the body declares; 400 for a body that is not an object, 422 listing every problem
        with its JSON path, none repeating a secret."""
        if not isinstance(document, dict):
            raise error(400, f"the body must be a JSON object: {self.one_called} as the configuration file declares it")
        problems = [f"$.{name}: {why}" for name, why in self.refused.items() if name in document]
        try:
            spec = self.spec.model_validate({k: v for k, v in document.items() if k not in self.refused})
        except ValidationError as e:
            problems += messages(e.errors())
        if problems:
            hidden = [text for name in self.secrets for text in _texts(document.get(name))]
            raise invalid(self.name, [_unrepeated(line, hidden) for line in problems])
        return spec

    def _unclaimed(self, organization_id: int, spec: Any, current: Any) -> None:
        """Refuse (409) a spec that would take the place of another object than ``current``."""
        row = self.existing(organization_id, spec)
        if row is not None and (current is None or row.id != current.id):
            identifier = getattr(row, self.identifier)
            raise error(409, f"{self._called(identifier)} exists: PUT or PATCH {self.path}/{identifier} changes it")

    def _owned(self, change: Change) -> Any:
        """The object the path names, locked for the write: 404 for none, 409 for one the file
        made."""
        text = change.params[self.identifier]
        row = self.named(change.organization_id, text, self.model.select().for_update())
        if row.owner != OWNER:
            slug = Organization.get_by_id(change.organization_id).slug
            raise error(
                409,
                f"{slug}/{text} is declared by the configuration file: change it there, "
                f"or release it with `pulse {self.plural} release {slug} {text}`",
            )
        return row

    def _matched(self, change: Change, row: Any) -> None:
        """412 when ``If-Match`` names another version of ``row``: checked once the request is
        otherwise valid, so that a body that is not is refused for what it is (400, 422)."""
        matched(change.if_match, etag(row.id, row.version), self._called(getattr(row, self.identifier)))

    def _changed(self, change: Change, current: Any, spec: Any) -> Answer:
        if self.identifier == "key" and spec.key != current.key:
            problem = f"$.key: is {current.key!r}, as the URL says: {self.one_called}'s key does not change"
            raise invalid(self.name, [problem])
        self._matched(change, current)
        return self._answer(self._write(current.organization_id, spec, current))

    def _write(self, organization_id: int, spec: Any, current: Any) -> Any:
        """The row written, as listed; a write that collides with another object is 409."""
        try:
            with db.atomic():  # a savepoint: the refusal below is answered, the request's transaction rolled back
                row_id = self.write(organization_id, spec, current)
        except peewee.IntegrityError:
            self._unclaimed(organization_id, spec, current)
            raise
        return self._listed().where(self.model.id == row_id).get()

    def _answer(self, row: Any) -> Answer:
        return Answer(self.show([row])[0], headers={"ETag": etag(row.id, row.version)})


def referenced(
    model: Any, organization_id: int, named: list[tuple[str, str]], name: str
) -> tuple[dict[str, Any], list[str]]:
    """The organization's rows of ``model`` that ``named`` gives (each a body's JSON path and the key
    it names), by key, locked against a delete until the write commits (`Resource.referrers`
    reads them under the deleted row's lock); and a problem for each path whose key the
    organization does not have (``$.members[0]: this organization has no person 'zoe'``)."""
    keys = sorted({key for _, key in named})
    query = model.select().where(model.organization == organization_id, model.key.in_(keys or [""]))
    found = {row.key: row for row in query.for_update("FOR SHARE")}
    problems = [f"{path}: this organization has no {name} {key!r}" for path, key in named if key not in found]
    return found, problems


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


def _texts(value: Any) -> Iterator[str]:
    """Every text in ``value``, however deep."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def _unrepeated(line: str, secrets: list[str]) -> str:
    """``line`` with each of ``secrets`` (as given or stripped, as the spec reads it, and as Python
    quotes either) as ``***``."""
    forms = {form for secret in secrets for text in (secret, secret.strip()) for form in (text, repr(text)[1:-1])}
    for form in sorted(forms, key=len, reverse=True):
        if len(form) >= SHORTEST_SECRET:
            line = line.replace(form, "***")
    return line
