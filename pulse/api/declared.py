"""What a route of the API declares about itself, beside its code: `Operation`, read by
`pulse.api.openapi` to write the OpenAPI document, and by `pulse.api.auth` to hand a route the
query parameters it declared and no other (`Asked`), so that the document and the code cannot
drift apart: a route that reads a parameter it did not declare fails at once.

A parameter (`Param`) is declared once, by name, with its JSON Schema; `pulse.api.params` and
`pulse.api.pages` give each kind the code that reads it (``read``), and a route reads its
parameters through them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from starlette.routing import Route


@dataclass(frozen=True)
class Param:
    """A query parameter (or a request header) a route reads: its name, what it means and its
    JSON Schema (a string, unless a kind of parameter says more)."""

    name: str
    description: str
    shape: Mapping[str, Any] | None = None  # its JSON Schema, when a kind of parameter does not say it

    def schema(self) -> dict[str, Any]:
        return dict(self.shape) if self.shape is not None else {"type": "string"}


@dataclass(frozen=True)
class Operation:
    """A method of a route as the OpenAPI document describes it.

    Parameters:
      summary: what it does, in a few words.
      answer: the type of the body of its success (a TypedDict; None for no body), turned into JSON
        Schema by pydantic.
      status: the status of its success.
      query: the query parameters it reads.
      headers: the request headers it reads beyond ``Authorization`` (``If-Match``).
      body: the pydantic model its body is validated by, or a JSON Schema (a merge patch), or None.
      body_required: whether a request without a body is refused.
      body_optional: the fields the body's model requires that this method lets a request leave
        out (a PUT's ``key``, which its URL gives).
      body_refused: the fields of the body's model this method refuses (``ca_file``: the API reads
        no file).
      refusals: the statuses it may refuse with beyond those of every route (401, 403, 429) and of
        every write (400, 413, 422): 400, 404, 409, 412, 422.
      answer_headers: the headers its success carries (``ETag``, ``Location``).
      example: a body of its success, as the document shows it.
      description: more than the summary, when it helps.
      body_example: a body it takes, as the document shows it.
    """

    summary: str
    answer: Any
    status: int = 200
    query: tuple[Param, ...] = ()
    headers: tuple[Param, ...] = ()
    body: type[BaseModel] | Mapping[str, Any] | None = None
    body_required: bool = True
    body_optional: tuple[str, ...] = ()
    body_refused: tuple[str, ...] = ()
    refusals: tuple[int, ...] = ()
    answer_headers: tuple[str, ...] = ()
    example: Any = None
    description: str = ""
    body_example: Any = None


class UndeclaredError(Exception):
    """A route read a query parameter its `Operation` does not declare: a bug, caught by any test
    of the route."""


class Asked(Mapping[str, str]):
    """A request's query parameters, as the route declared them: those it did not are left out,
    and reading one of those is `UndeclaredError` (not a KeyError, which ``get`` would swallow)."""

    def __init__(self, query: Mapping[str, str], declared: tuple[Param, ...]) -> None:
        self._names = frozenset(p.name for p in declared)
        self._query = {k: v for k, v in query.items() if k in self._names}

    def __getitem__(self, name: str) -> str:
        if name not in self._names:
            raise UndeclaredError(f"the query parameter {name!r} is read but not declared by the route's Operation")
        return self._query[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._query)

    def __len__(self) -> int:
        return len(self._query)

    def __contains__(self, name: object) -> bool:
        return name in self._query


class DeclaredRoute(Route):
    """A route of the API with what it declares: the scope a token needs and an `Operation` per
    method (None for one not declared yet, which `pulse.api.openapi` refuses to describe)."""

    def __init__(self, path: str, endpoint: Any, *, needs: str, operations: Mapping[str, Operation | None]) -> None:
        super().__init__(path, endpoint, methods=list(operations))
        self.needs = needs
        self.operations = dict(operations)
