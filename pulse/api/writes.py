"""The API's writes: `write_route`, a route that changes what a token's organization has (scope
``write`` for what the configuration file declares, ``incidents`` and ``oncall`` for incidents and
alerts). A request is authenticated as a read is (`pulse.api.auth`: 401, 429, 403), its body read
within `MAX_BODY` bytes (413), and then, in a worker thread, in one transaction:

1. the body, JSON or none (400 naming what is wrong with it: `pulse.inbound.jsonbody`);
2. on a POST with an ``Idempotency-Key`` (the IETF draft "The Idempotency-Key HTTP Header Field",
   as Stripe's API uses it): a key this token used in the last `KEY_LIFETIME` for the same request
   (method, path and body) is answered what it was answered then, with ``Idempotent-Replayed:
   true``, and writes nothing; for another request, 422. A retry sent while the first is still
   running waits for it (the key's row is locked) and is answered the same. Only a write that
   succeeded keeps its key: a refused one (4xx) can be retried with it;
3. the route's write, which may refuse (400, 404, 409, 412, 422) and then writes nothing;
4. the audit row (`pulse.api.audit`): the token, the action, the object's type and key (or id),
   the status.

A refusal rolls the transaction back, and is audited on its own. ``If-Match`` (RFC 9110) is the
route's to check against the object's `etag`: `matched`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import peewee
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pulse.api import audit, params
from pulse.api.auth import Answer, answered, authenticate, bearer, error
from pulse.api.declared import DeclaredRoute, Operation, Param
from pulse.db import db
from pulse.inbound import jsonbody
from pulse.inbound.bounds import RefusedError, read_body
from pulse.inbound.limits import TokenBuckets
from pulse.models import utcnow
from pulse.models.api_writes import KEY_LIFETIME
from pulse.spec import messages

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T", bound=peewee.Model)

SCOPE = "write"
MAX_BODY = 1024 * 1024  # bytes: a component's largest fields (a CA, a body, 50 headers) fit
ACTIONS = {"POST": "create", "PUT": "replace", "PATCH": "patch", "DELETE": "delete"}
REUSED = "Keys for idempotent requests can only be used with the same parameters"

IDEMPOTENCY_KEY = Param(
    "Idempotency-Key",
    "A key of the client's own (a UUID): a retry of the same request with it is answered the same, "
    "and writes nothing more, for 24 hours.",
    # printable ASCII; a header's value has no space at either end (h11 strips them)
    {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]([ -~]*[!-~])?$"},
)
IF_MATCH = Param(
    "If-Match",
    "The ETag the client last read (or a list of them, or *): another is refused with 412.",
)

CLAIM = """
INSERT INTO api_idempotency (token_id, key, request_sha256, created_at) VALUES (%(token)s, %(key)s, %(sha)s, %(now)s)
ON CONFLICT (token_id, key) DO UPDATE
SET request_sha256 = EXCLUDED.request_sha256, created_at = EXCLUDED.created_at, status = NULL, headers = NULL,
    body = NULL
WHERE api_idempotency.created_at <= %(expired)s
RETURNING true
"""
KEPT = "SELECT request_sha256, status, headers, body FROM api_idempotency WHERE token_id = %s AND key = %s"
KEEP = "UPDATE api_idempotency SET status = %s, headers = %s, body = %s WHERE token_id = %s AND key = %s"


@dataclass(frozen=True)
class Change:
    """What a write is given: the token's organization and what the request asked.

    Parameters:
      organization_id: the token's organization, the only one whose rows the write changes.
      params: the route's path parameters.
      document: the body's JSON value (None without a body).
      if_match: the ``If-Match`` header, for `matched`.
    """

    organization_id: int
    params: Mapping[str, str]
    document: Any
    if_match: str | None


Write = Callable[[Change], Answer]  # inside the request's transaction; RefusedError writes nothing


@dataclass(frozen=True)
class _Request:
    method: str
    path: str
    params: dict[str, str]
    body: bytes
    if_match: str | None
    idempotency_key: str | None


def write_route(
    path: str,
    writes: Mapping[str, Write],
    *,
    object_type: str,
    buckets: TokenBuckets,
    scope: str = SCOPE,
    action: str | None = None,
    docs: Mapping[str, Operation] | None = None,
) -> DeclaredRoute:
    """A route at ``path`` answering each method of ``writes`` (POST, PUT, PATCH, DELETE) with its
    write, to a token with ``scope``.

    Parameters:
      object_type: what the route writes, as the audit names it (``component``).
      buckets: the rate limiter the API's routes share.
      action: what the audit calls the write (``acknowledge``), when it is not the method's
        (`ACTIONS`).
      docs: what the OpenAPI document says of each method (`pulse.api.openapi`).
    """

    async def endpoint(request: Request) -> Response:
        key = bearer(request, buckets)
        try:
            body = await read_body(request, MAX_BODY)
        except RefusedError as e:  # 413, answered as the API's refusals are: JSON
            raise RefusedError(e.status, e.reason, headers=e.headers, body={"error": e.reason}) from None
        idempotency_key = request.headers.get("idempotency-key") if request.method == "POST" else None
        asked = _Request(
            method=request.method,
            path=request.url.path,
            params=dict(request.path_params),
            body=body,
            if_match=request.headers.get("if-match"),
            idempotency_key=idempotency_key,
        )
        write = writes[request.method]
        audited = (scope, action or ACTIONS[request.method], object_type)
        return answered(await run_in_threadpool(_written, write, key, audited, asked, utcnow()))

    return DeclaredRoute(path, endpoint, needs=scope, operations={m: (docs or {}).get(m) for m in writes})


def _written(write: Write, key: bytes, audited: tuple[str, str, str], asked: _Request, now: datetime) -> Answer:
    scope, action, object_type = audited
    with db.connection_context():
        token = authenticate(key, scope, now)
        object_key = asked.params.get("key") or asked.params.get("id", "")
        try:
            with db.atomic():
                document = _document(asked.body)
                if not object_key and isinstance(document, dict) and isinstance(document.get("key"), str):
                    object_key = document["key"]
                change = Change(token.organization_id, asked.params, document, asked.if_match)
                done = None
                if asked.idempotency_key is not None:
                    done = _replayed(token.id, asked.idempotency_key, _sha256(asked, document), now)
                if done is None:
                    done = write(change)
                    if asked.idempotency_key is not None:
                        _keep(token.id, asked.idempotency_key, done)
                if not object_key and isinstance(done.body, dict) and "id" in done.body:
                    object_key = str(done.body["id"])  # a created incident's
                audit.record(token.organization_id, token.id, action, object_type, object_key, done.status, now)
                return done
        except RefusedError as e:
            audit.record(token.organization_id, token.id, action, object_type, object_key, e.status, now)
            raise


def _document(body: bytes) -> Any:
    """The body's JSON value, None for no body; 400 naming what is wrong with it."""
    if not body.strip():
        return None
    try:
        return jsonbody.loads(body)[0]
    except jsonbody.BodyError as e:
        raise error(400, str(e)) from None


def _sha256(asked: _Request, document: Any) -> bytes:
    """What tells two requests apart for an idempotency key: method, path and body (as JSON with
    sorted keys, so that the order of its fields does not count)."""
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{asked.method} {asked.path}\n{canonical}".encode()).digest()


def _replayed(token_id: int, key: str, sha: bytes, now: datetime) -> Answer | None:
    """The answer kept for ``key``, if this token used it for the same request; None when the key
    is new (or expired), now claimed in this transaction; 422 for another request."""
    if not 1 <= len(key) <= 255 or not key.isascii() or not key.isprintable():
        raise error(400, "Idempotency-Key must be 1 to 255 printable ASCII characters")
    params = {"token": token_id, "key": key, "sha": sha, "now": now, "expired": now - KEY_LIFETIME}
    if db.execute_sql(CLAIM, params).fetchone() is not None:
        return None
    kept_sha, status, headers, body = db.execute_sql(KEPT, (token_id, key)).fetchone()
    if bytes(kept_sha) != sha:
        raise error(422, REUSED)
    return Answer(body, status=status, headers={**headers, "Idempotent-Replayed": "true"})


def _keep(token_id: int, key: str, done: Answer) -> None:
    db.execute_sql(KEEP, (done.status, json.dumps(dict(done.headers)), json.dumps(done.body), token_id, key))


def invalid(what: str, problems: list[str]) -> RefusedError:
    """422: ``what`` is not valid, listing each problem (``$.path: reason``) beside the error."""
    text = f"the {what} is not valid"
    return RefusedError(422, text, body={"error": text, "problems": problems})


def validated(model: type[M], document: Any, what: str, fields: str) -> M:
    """``document``, the body of ``what`` (``incident``) with its ``fields``, as ``model`` validates
    it: 400 for a body that is not a JSON object, 422 listing every problem with its JSON path."""
    if not isinstance(document, dict):
        raise error(400, f"the body must be a JSON object: the {what} ({fields})")
    try:
        return model.model_validate(document)
    except ValidationError as e:
        raise invalid(what, messages(e.errors())) from None


def locked(model: type[T], change: Change, what: str) -> T:
    """The row of ``model`` (an incident, an alert) whose id the path gives, of the token's
    organization, locked until the write commits; else 404 naming ``what``."""
    text = change.params["id"]
    number, row = params.row_id(text), None
    if number is not None:
        table: Any = model  # a model with an organization and an id
        query = table.select().where(table.organization == change.organization_id, table.id == number)
        row = query.for_update().first()
    if row is None:
        raise error(404, f"no {what} {text[:100]!r}")
    return row


def etag(object_id: int, version: int) -> str:
    """The strong ETag of an object's configuration: its id (a new object of the same key has
    another) and version (which every write of it raises)."""
    return f'"{object_id}.{version}"'


def matched(if_match: str | None, current: str, what: str) -> None:
    """Refuse a write whose ``If-Match`` names neither ``*`` nor the ``current`` ETag of ``what``
    (412); none at all writes unconditionally."""
    if if_match is None:
        return
    named = [tag.strip() for tag in if_match.split(",")]
    if "*" not in named and current not in named:
        raise error(412, f"{what} changed since that ETag: it is now {current} (GET it again)")
