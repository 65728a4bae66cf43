"""Cursor pagination: a listing ordered by a unique key answers at most ``limit`` rows and a
``next_cursor`` (None on the last page); the cursor, opaque to the client, is the last key shown
(as text), base64url-encoded. A page after another starts past that key, so rows added or removed
between requests neither repeat nor shift the pages. A text key is read back by `after`, a number
(an id, newest first) by `after_number`, an instant (a check's slot) by `after_instant`."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pulse.api.auth import error
from pulse.api.declared import Param
from pulse.api.params import Whole, row_id
from pulse.inbound.bounds import RefusedError

DEFAULT_LIMIT = 50
MAX_LIMIT = 200

LIMIT = Whole("limit", "How many to answer at most.", least=1, most=MAX_LIMIT, default=DEFAULT_LIMIT)
CURSOR = Param(
    "cursor",
    "The page after another: its next_cursor, passed back as it came (opaque).",
    {"type": "string", "pattern": "^[A-Za-z0-9_-]+$"},  # base64url, unpadded
)
QUERY = (LIMIT, CURSOR)  # what a listing's route declares, before its filters


def limit(query: Mapping[str, str]) -> int:
    """The ``limit`` asked for: 1 to `MAX_LIMIT`, `DEFAULT_LIMIT` when absent; else 400."""
    return LIMIT.read(query) or DEFAULT_LIMIT


def after(query: Mapping[str, str]) -> str | None:
    """The key the ``cursor`` asked for stands for (None without one); 400 for one this API did not give."""
    text = query.get(CURSOR.name)
    if text is None:
        return None
    if not text:  # none the API gives: a client that sends a null cursor as "" would page for ever
        raise _refused()
    try:
        key = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        key = None
    if key is None or "\x00" in key:  # no key holds a NUL, which PostgreSQL refuses
        raise _refused()
    return key


def after_number(query: Mapping[str, str]) -> int | None:
    """The id the ``cursor`` stands for (None without one); 400 for one this API did not give."""
    key = after(query)
    if key is None:
        return None
    number = row_id(key)
    if number is None:
        raise _refused()
    return number


def after_instant(query: Mapping[str, str]) -> datetime | None:
    """The instant the ``cursor`` stands for (None without one); 400 for one this API did not give."""
    key = after(query)
    if key is None:
        return None
    try:
        instant = datetime.fromisoformat(key)
    except ValueError:
        raise _refused() from None
    if instant.tzinfo is None:
        raise _refused()
    return instant


def take(query: Any, order: Any, limit: int, key: str) -> tuple[list[Any], str | None]:
    """The first ``limit`` rows of ``query`` in ``order`` (a column's, unique), and the cursor of the
    page after them: that of the last row's ``key`` attribute (None on the last page)."""
    rows = list(query.order_by(order).limit(limit + 1))
    if len(rows) > limit:
        return rows[:limit], cursor(getattr(rows[limit - 1], key))
    return rows, None


def cursor(key: str | int | datetime) -> str:
    """The cursor of the page after ``key``."""
    text = key.isoformat() if isinstance(key, datetime) else str(key)
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _refused() -> RefusedError:
    return error(400, "cursor is not one this API gave (use next_cursor as it came)")
