"""Cursor pagination: a listing ordered by a unique text key answers at most ``limit`` rows and a
``next_cursor`` (None on the last page); the cursor, opaque to the client, is the last key shown,
base64url-encoded. A page after another starts past that key, so rows added or removed between
requests neither repeat nor shift the pages."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping

from pulse.api.auth import error

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


def limit(query: Mapping[str, str]) -> int:
    """The ``limit`` asked for: 1 to `MAX_LIMIT`, `DEFAULT_LIMIT` when absent; else 400."""
    text = query.get("limit")
    if text is None:
        return DEFAULT_LIMIT
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
        raise error(400, f"limit must be a whole number from 1 to {MAX_LIMIT}")
    return int(text)


def after(query: Mapping[str, str]) -> str | None:
    """The key the ``cursor`` asked for stands for (None without one); 400 for one this API did not give."""
    text = query.get("cursor")
    if text is None:
        return None
    try:
        key = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        key = None
    if key is None or "\x00" in key:  # no key holds a NUL, which PostgreSQL refuses
        raise error(400, "cursor is not one this API gave (use next_cursor as it came)")
    return key


def cursor(key: str) -> str:
    """The cursor of the page after ``key``."""
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")
