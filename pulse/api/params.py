"""What a request of the API asks for, read or refused with 400 naming it: a filter among fixed
values (`one_of`), a key (`key`), an instant (`instant`), the id in a path (`row_id`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime

from pulse.api.auth import error
from pulse.spec import SLUG

BIGGEST = 2**63 - 1  # PostgreSQL's bigint: an id past it is none


def one_of(query: Mapping[str, str], name: str, allowed: Sequence[str]) -> str | None:
    """The value of filter ``name`` (None without one); 400 when it is not one of ``allowed``."""
    value = query.get(name)
    if value is not None and value not in allowed:
        raise error(400, f"{name} must be one of {', '.join(allowed)}")
    return value


def key(query: Mapping[str, str], name: str) -> str | None:
    """The key filter ``name`` gives (a component's, a source's; None without one); 400 for one that
    cannot be a key (a NUL, which PostgreSQL refuses, among others)."""
    value = query.get(name)
    if value is not None and not re.fullmatch(SLUG, value):
        raise error(400, f"{name} must be a key: a-z, 0-9, - and _, up to 64")
    return value


def instant(query: Mapping[str, str], name: str) -> datetime | None:
    """The instant ``name`` gives, ISO 8601 with its offset (None without one); else 400."""
    text = query.get(name)
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        value = None
    if value is None or value.tzinfo is None:
        said = f"{name} must be an ISO 8601 time with its offset, such as 2026-12-07T14:00:00Z (a + is sent as %2B)"
        raise error(400, said)
    return value


def row_id(text: str) -> int | None:
    """The id ``text`` gives (a path's, a cursor's), or None when it cannot be one (a path's route
    answers 404, as for an unknown id)."""
    if not text.isascii() or not text.isdigit() or len(text) > 19 or int(text) > BIGGEST:
        return None
    return int(text)
