"""What a request of the API asks for, read or refused with 400 naming it: a filter among fixed
values (`OneOf`), a key (`Key`), an instant (`Instant`), each a `pulse.api.declared.Param` a route
declares (the OpenAPI document shows its schema) and reads; the id in a path (`row_id`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pulse.api.auth import error
from pulse.api.declared import Param
from pulse.spec import SLUG

BIGGEST = 2**63 - 1  # PostgreSQL's bigint: an id past it is none


@dataclass(frozen=True)
class OneOf(Param):
    """A filter among fixed values."""

    allowed: tuple[str, ...] = ()

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.allowed)}

    def read(self, query: Mapping[str, str]) -> str | None:
        """Its value (None without one); 400 when it is not one of ``allowed``."""
        value = query.get(self.name)
        if value is not None and value not in self.allowed:
            raise error(400, f"{self.name} must be one of {', '.join(self.allowed)}")
        return value


@dataclass(frozen=True)
class Key(Param):
    """A key (a component's, a source's)."""

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": SLUG}

    def read(self, query: Mapping[str, str]) -> str | None:
        """Its value (None without one); 400 for one that cannot be a key (a NUL, which PostgreSQL
        refuses, among others)."""
        value = query.get(self.name)
        if value is not None and not re.fullmatch(SLUG, value):
            raise error(400, f"{self.name} must be a key: a-z, 0-9, - and _, up to 64")
        return value


@dataclass(frozen=True)
class Instant(Param):
    """An instant, ISO 8601 with its offset."""

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "format": "date-time"}

    def read(self, query: Mapping[str, str]) -> datetime | None:
        """Its value (None without one); else 400."""
        text = query.get(self.name)
        if text is None:
            return None
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            value = None
        if value is None or value.tzinfo is None:
            said = (
                f"{self.name} must be an ISO 8601 time with its offset, such as 2026-12-07T14:00:00Z "
                "(a + is sent as %2B)"
            )
            raise error(400, said)
        return value


@dataclass(frozen=True)
class Whole(Param):
    """A whole number from ``least`` to ``most``, ``default`` when absent."""

    least: int = 1
    most: int = 1
    default: int | None = None

    def schema(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"type": "integer", "minimum": self.least, "maximum": self.most}
        return shown if self.default is None else {**shown, "default": self.default}

    def read(self, query: Mapping[str, str]) -> int | None:
        """Its value (`default` without one); else 400."""
        text = query.get(self.name)
        if text is None:
            return self.default
        # at most 18 digits: int() of thousands of them is slow, and of more than 4300 a ValueError
        if not (text.isascii() and text.isdigit() and len(text) <= 18 and self.least <= int(text) <= self.most):
            raise error(400, f"{self.name} must be a whole number from {self.least} to {self.most}")
        return int(text)


def row_id(text: str) -> int | None:
    """The id ``text`` gives (a path's, a cursor's), or None when it cannot be one (a path's route
    answers 404, as for an unknown id)."""
    if not text.isascii() or not text.isdigit() or len(text) > 19 or int(text) > BIGGEST:
        return None
    return int(text)
