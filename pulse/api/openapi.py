"""The API's OpenAPI 3.1 document, ``GET /api/openapi.json`` (no token: it describes the API and
holds no data), generated from the routes themselves, never written by hand: each route of
`pulse.api.routes` is a `pulse.api.declared.DeclaredRoute` whose methods declare an `Operation`
(summary, query parameters and headers, body model, answer type, refusals, examples), and its
scope. `document` walks them:

- a path's parameters from its template (``{key}``, ``{id}``: `PATH`), the query's and headers'
  from the declaration (the same objects the route reads them with: they cannot drift);
- a body's schema from its pydantic model (`model_json_schema`, through `TypeAdapter`), an
  answer's from the TypedDict its code returns (which mypy checks the code against);
- the refusals every route may answer (401, 403, 429, 503), every write (400, 413, and 422 for a
  body or an ``Idempotency-Key``), and the route's own, with their shapes and headers;
- the scope, as the bearer scheme's role (OpenAPI 3.1 lets a non-OAuth scheme list roles) and as
  ``x-scopes``; links from a create (201) to the operations on what it made.

A route under ``/api/v1`` without its declaration is `UndescribedError`: the document is complete
or it is not made (a test builds it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from typing_extensions import TypedDict

from pulse.api.declared import DeclaredRoute, Operation, Param
from pulse.api.params import BIGGEST
from pulse.api.writes import IDEMPOTENCY_KEY
from pulse.spec import SLUG, show_duration

PATH = "/api/openapi.json"
PREFIX = "/api/v1"
REF = "#/components/schemas/{model}"
SCHEME = "bearer"

#: The parameters a path's template may hold: their JSON Schema, meaning and example.
PATH_PARAMS: dict[str, tuple[dict[str, Any], str, Any]] = {
    "key": ({"type": "string", "pattern": SLUG}, "The object's key, as the configuration file names it.", "api"),
    "id": ({"type": "integer", "minimum": 1, "maximum": BIGGEST}, "The object's id.", 1),
}

REASONS = {
    400: "A parameter, cursor, body or Idempotency-Key that cannot be: the error names it.",
    401: "No bearer token, or one that cannot be used (unknown, expired, revoked): the same answer for each.",
    403: "The token lacks the route's scope, which the error names.",
    404: "No such object in the token's organization.",
    409: "The object is the configuration file's, exists already, or is in a state that refuses this.",
    412: "If-Match names none of the object's current ETag.",
    413: "A body over 1 MiB.",
    422: "The body is not valid (every problem with its JSON path), or the Idempotency-Key was used for "
    "another request.",
    429: "Over the token's rate: retry after Retry-After seconds.",
    503: "The database is unavailable: retry after Retry-After seconds.",
}
ANSWER_HEADERS = {
    "ETag": "The object's version, for If-Match.",
    "Location": "The URL of the object made or changed.",
}


class UndescribedError(Exception):
    """A route of the API declares no `Operation` for one of its methods."""


class Refusal(TypedDict):
    """A refusal: why, in a few words."""

    error: str


class Invalid(TypedDict):
    """A body that is not valid: each problem starting with its JSON path."""

    error: str
    problems: list[str]


class Generator(GenerateJsonSchema):
    """Pydantic's JSON Schema, with a duration's default as the file writes one (``1m``, not
    ISO 8601's ``PT1M``: `pulse.spec.DURATION_SCHEMA`)."""

    def encode_default(self, dft: Any) -> Any:
        return super().encode_default(_durations_shown(dft))


def _durations_shown(value: Any) -> Any:
    if isinstance(value, timedelta):
        return show_duration(value)
    if isinstance(value, list | tuple):
        return [_durations_shown(v) for v in value]
    return value


class Schemas:
    """The document's ``components/schemas``, gathered from each type's JSON Schema."""

    def __init__(self) -> None:
        self.found: dict[str, Any] = {}

    def of(self, kind: Any, mode: str = "serialization") -> dict[str, Any]:
        """``kind``'s JSON Schema with its definitions moved to the components (a reference for a
        named type)."""
        schema = TypeAdapter(kind).json_schema(mode=mode, ref_template=REF, schema_generator=Generator)  # type: ignore[arg-type]
        for name, definition in schema.pop("$defs", {}).items():
            self._add(name, definition)
        return schema

    def ref(self, kind: Any, mode: str = "serialization") -> dict[str, Any]:
        """A reference to ``kind``'s schema, added to the components under its title."""
        schema = self.of(kind, mode)
        if "$ref" in schema:
            return schema
        name = schema.get("title") or kind.__name__
        self._add(name, schema)
        return {"$ref": REF.format(model=name)}

    def _add(self, name: str, schema: Any) -> None:
        if self.found.setdefault(name, schema) != schema:
            raise UndescribedError(f"two schemas are named {name!r}: rename one of the types")


def document(served: Sequence[BaseRoute], prefix: str = PREFIX) -> dict[str, Any]:
    """The OpenAPI document of the routes under ``prefix`` of ``served`` (the API's catch-all,
    ``{rest:path}``, aside); `UndescribedError` for one that declares nothing."""
    schemas = Schemas()
    paths: dict[str, dict[str, Any]] = {}
    for route in served:
        path = getattr(route, "path", "")
        if not path.startswith(prefix + "/") or path.endswith("{rest:path}"):
            continue
        if not isinstance(route, DeclaredRoute):
            raise UndescribedError(f"{path} is no DeclaredRoute: make it with api_route or write_route, with its doc")
        for method, operation in route.operations.items():
            if operation is None:
                raise UndescribedError(f"{method} {path} declares no Operation (api_route's doc, write_route's docs)")
            paths.setdefault(path, {})[method.lower()] = _operation(schemas, prefix, path, method, route, operation)
    _link(paths)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Pulse API",
            "version": "1",
            "description": "An organization's components, notification channels and subscribers, incidents and on-call "
            "alerts, for tokens with scopes "
            "(`pulse tokens create`). Generated from the routes' declarations: docs/api.md says more.",
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.found.items())),
            "securitySchemes": {
                SCHEME: {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A token of `pulse tokens create`, with the scope each operation names.",
                }
            },
        },
    }


def _operation(
    schemas: Schemas, prefix: str, path: str, method: str, route: DeclaredRoute, operation: Operation
) -> dict[str, Any]:
    parameters = [_path_param(name, path) for name in re.findall(r"{(\w+)(?::\w+)?}", path)]
    parameters += [_param(p, "query") for p in operation.query]
    headers = (*operation.headers, *((IDEMPOTENCY_KEY,) if method == "POST" and operation.body is not None else ()))
    parameters += [_param(p, "header") for p in headers]
    scope = route.needs
    shown: dict[str, Any] = {
        "operationId": _operation_id(method, path.removeprefix(prefix)),
        "tags": [path.removeprefix(prefix).split("/")[1]],
        "summary": operation.summary,
        "description": f"{operation.description}\n\nScope: `{scope}`.".lstrip(),
        "security": [{SCHEME: [scope]}],
        "x-scopes": [scope],
    }
    if parameters:
        shown["parameters"] = parameters
    if operation.body is not None:
        shown["requestBody"] = _body(schemas, operation, method)
    refusals = {401, 403, 429, 503, *operation.refusals}
    if method != "GET":
        refusals |= {400, 413} | ({422} if method == "POST" or operation.body is not None else set())
    shown["responses"] = {
        str(operation.status): _success(schemas, operation),
        **{str(status): _refusal(schemas, status) for status in sorted(refusals)},
    }
    return shown


def _operation_id(method: str, path: str) -> str:
    words = re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_")
    return f"{method.lower()}_{words}"


def _path_param(name: str, path: str) -> dict[str, Any]:
    if name not in PATH_PARAMS:
        raise UndescribedError(f"{path}: its parameter {name!r} is not in pulse.api.openapi.PATH_PARAMS")
    schema, description, example = PATH_PARAMS[name]
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": schema,
        "example": example,
    }


def _param(param: Param, where: str) -> dict[str, Any]:
    return {
        "name": param.name,
        "in": where,
        "required": False,
        "description": param.description,
        "schema": param.schema(),
    }


def _body(schemas: Schemas, operation: Operation, method: str) -> dict[str, Any]:
    body = operation.body
    if isinstance(body, type):
        schema = schemas.ref(body, "validation")
        if operation.body_optional or operation.body_refused:  # the model's own schema, trimmed
            own = dict(schemas.found[schema["$ref"].rsplit("/", 1)[1]])
            own["properties"] = {k: v for k, v in own["properties"].items() if k not in operation.body_refused}
            dropped = {*operation.body_optional, *operation.body_refused}
            own["required"] = [f for f in own.get("required", []) if f not in dropped]
            schema = own
    else:
        schema = dict(body or {})
    if not operation.body_required:  # a JSON null is taken as no body (`pulse.api.writes`)
        schema = {"anyOf": [schema, {"type": "null"}]}
    media: dict[str, Any] = {"schema": schema}
    if operation.body_example is not None:
        media["example"] = operation.body_example
    types = ["application/merge-patch+json", "application/json"] if method == "PATCH" else ["application/json"]
    return {"required": operation.body_required, "content": dict.fromkeys(types, media)}


def _success(schemas: Schemas, operation: Operation) -> dict[str, Any]:
    shown: dict[str, Any] = {"description": operation.summary}
    if operation.answer is not None:
        media: dict[str, Any] = {"schema": schemas.ref(operation.answer)}
        if operation.example is not None:
            media["example"] = operation.example
        shown["content"] = {"application/json": media}
    if operation.answer_headers:
        shown["headers"] = {
            name: {"description": ANSWER_HEADERS[name], "required": True, "schema": {"type": "string"}}
            for name in operation.answer_headers
        }
    return shown


def _refusal(schemas: Schemas, status: int) -> dict[str, Any]:
    shown: dict[str, Any] = {"description": REASONS[status]}
    if status == 503:  # answered before any route, as text
        shown["content"] = {"text/plain": {"schema": {"type": "string"}}}
    elif status == 422:
        shown["content"] = {"application/json": {"schema": {"anyOf": [schemas.ref(Invalid), schemas.ref(Refusal)]}}}
    else:
        shown["content"] = {"application/json": {"schema": schemas.ref(Refusal)}}
    if status == 401:
        shown["headers"] = {"WWW-Authenticate": {"required": True, "schema": {"type": "string", "const": "Bearer"}}}
    if status in (429, 503):
        retry = {"description": "Seconds to wait.", "required": True, "schema": {"type": "integer", "minimum": 1}}
        shown["headers"] = {"Retry-After": retry}
    return shown


def _link(paths: dict[str, dict[str, Any]]) -> None:
    """Links from each create (a POST answered 201 at a collection) to the operations on what it
    made, at the collection's path and a parameter: ``$response.body#/key`` (or ``id``)."""
    for path, methods in paths.items():
        made = methods.get("post", {}).get("responses", {}).get("201")
        if made is None:
            continue
        links = {}
        for other, them in paths.items():
            found = re.match(re.escape(path) + r"/{(\w+)}", other)
            if found is None:
                continue
            name = found.group(1)
            for operation in them.values():
                links[operation["operationId"]] = {
                    "operationId": operation["operationId"],
                    "parameters": {name: f"$response.body#/{name}"},
                }
        if links:
            made["links"] = links


def route(served: Sequence[BaseRoute]) -> Route:
    """``GET /api/openapi.json``: the document of ``served``, made at its first request and
    answered as the same bytes after."""
    made: list[bytes] = []

    async def endpoint(request: Request) -> Response:
        if not made:
            made.append(json.dumps(document(served), separators=(",", ":")).encode())
        return Response(made[0], media_type="application/json")

    return Route(PATH, endpoint, methods=["GET"])
