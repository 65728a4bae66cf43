"""Words every channel shares: shortening to a vendor's limit, UTC times, status names, colors.

Limits count characters (Python's code points) unless a function says bytes. Text that does not
fit is cut and ends with "…"; nothing is left for a vendor to reject.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

from pulse.components import status as st
from pulse.notifications.channels.notice import CRITICAL, INFO, RESOLVED, WARNING, Notice

ELLIPSIS = "…"
STATUS_MAX = 100  # characters of a status name
MAX_URL = 2000  # a longer link is left out rather than cut: half a URL leads nowhere

COLORS: dict[str, int] = {CRITICAL: 0xE01E5A, WARNING: 0xECB22E, RESOLVED: 0x2EB67D, INFO: 0x36C5F0}

STATUS_NAMES: dict[str, str] = {
    st.OPERATIONAL: "Operational",
    st.DEGRADED: "Degraded performance",
    st.PARTIAL_OUTAGE: "Partial outage",
    st.MAJOR_OUTAGE: "Major outage",
    st.MAINTENANCE: "Under maintenance",
}


def shorten(text: str, limit: int, one_line: bool = False) -> str:
    """``text`` in at most ``limit`` characters, ending with "…" when cut.

    Parameters:
      text: any text.
      limit: the most characters the result may have; below 1 gives "".
      one_line: collapse every run of whitespace (newlines included) into one space first.
    """
    if one_line:
        text = " ".join(text.split())
    if len(text) <= limit:
        return text
    if limit < 1:
        return ""
    return text[: limit - 1].rstrip() + ELLIPSIS


def shorten_bytes(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` bytes of UTF-8, ending with "…" when cut; a character is never split.

    Below 3 bytes there is no room for "…": the result is then the longest prefix that fits.
    """
    data = text.encode()
    if len(data) <= limit:
        return text
    room = limit - len(ELLIPSIS.encode())
    if room < 0:
        return data[: max(limit, 0)].decode(errors="ignore")
    return data[:room].decode(errors="ignore").rstrip() + ELLIPSIS


def fit(
    text: str,
    limit: int,
    *,
    escape: Callable[[str], str] | None = None,
    measure: Callable[[str], int] = len,
    one_line: bool = False,
) -> str:
    """``text`` shortened so that, escaped, ``measure`` finds it within ``limit``.

    The text is cut before escaping, so an entity such as ``&amp;`` is never cut in half.

    Parameters:
      escape: makes the text safe for the target format (returned escaped); None for none.
      measure: how the limit counts, ``len`` by default (see `json_length`).
      one_line: as in `shorten`.
    """
    escape = escape or (lambda s: s)
    if one_line:
        text = " ".join(text.split())
    fits, over = 0, min(len(text), max(limit, 0))  # characters kept: 0 always fits
    if measure(escape(shorten(text, over))) <= limit:
        return escape(shorten(text, over))
    while over - fits > 1:  # the measure grows with the characters kept: search for the most that fit
        middle = (fits + over) // 2
        if measure(escape(shorten(text, middle))) <= limit:
            fits = middle
        else:
            over = middle
    return escape(shorten(text, fits))


def json_length(text: str) -> int:
    """How many bytes ``text`` takes inside a JSON string written by `json.dumps` (quotes excluded)."""
    return len(json.dumps(text)) - 2


def utc(dt: datetime) -> datetime:
    """``dt`` in UTC; a naive datetime is taken to be UTC already."""
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def when(dt: datetime) -> str:
    """A time as people read it on any channel: "2026-12-01 14:03 UTC"."""
    return utc(dt).strftime("%Y-%m-%d %H:%M UTC")


def iso(dt: datetime) -> str:
    """A time for machines: ISO 8601 in UTC, "2026-12-01T14:03:27+00:00"."""
    return utc(dt).isoformat()


def status_name(status: str | None) -> str:
    """A component status in words: "MAJOR_OUTAGE" reads "Major outage"; None reads "Unknown".

    A status Pulse does not know reads as itself, on one line, in at most `STATUS_MAX` characters.
    """
    if not status:
        return "Unknown"
    return STATUS_NAMES.get(status) or shorten(status.replace("_", " ").capitalize(), STATUS_MAX, one_line=True)


def change(notice: Notice) -> str | None:
    """The status line: "Operational → Major outage", just "Major outage", or None without a status."""
    if not notice.status:
        return None
    if notice.previous_status and notice.previous_status != notice.status:
        return f"{status_name(notice.previous_status)} → {status_name(notice.status)}"
    return status_name(notice.status)


def headline(notice: Notice) -> str:
    """The notice's title on one line, never empty (vendors reject empty titles)."""
    return " ".join(notice.title.split()) or " ".join((notice.component or "").split()) or notice.kind


def filled(text: str) -> str:
    """``text`` on one line, or "—" when blank (vendors reject empty values)."""
    return " ".join(text.split()) or "—"


def link(notice: Notice) -> str | None:
    """The notice's http(s) URL, or None when unset, of another scheme, or longer than `MAX_URL`."""
    url = (notice.url or "").strip()
    if not url.startswith(("https://", "http://")) or json_length(url) > MAX_URL:
        return None
    return url
