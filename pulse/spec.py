"""Building blocks of the configuration file's models (`pulse.configfile`), shared by every
domain's spec: strict models, slugs, URLs, durations. Errors name the problem, never a URL (its
path or query may hold a token)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from pulse.net import urls
from pulse.net.exchange import check_header

SLUG = r"^[a-z0-9][a-z0-9_-]{0,63}$"
MAX_DURATION = timedelta(days=3650)  # far beyond any setting, far below what timedelta can hold
_DURATION = re.compile(r"(\d+)(ms|s|m|h|d)")
#: A duration in a JSON Schema (the API's OpenAPI document): as `parse_duration` reads it, not
#: ISO 8601's, which pydantic would say of a timedelta.
DURATION_SCHEMA = WithJsonSchema(
    {
        "anyOf": [
            {"type": "string", "pattern": r"^(\d+(ms|s|m|h|d))+$", "examples": ["30s", "1h30m"]},
            {"type": "number"},
        ]
    }
)
_INNER_PATH = re.compile(r"[a-z_]+(?:\[[0-9]+\])+[.:\[ ]")  # "layers[1].handoff: ...", "schedules[0] pages ..."

Slug = Annotated[str, Field(pattern=SLUG)]


class Strict(BaseModel):
    """A part of the file: unknown fields are refused, texts are stripped."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


def http_url(value: str) -> str:
    """An http(s) URL with a host, that the requests Pulse makes accept as they will use it; the
    text never echoes the URL (it may hold a token)."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise ValueError("not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL with a host")
    try:
        urls.parse(value)
    except urls.FetchError as e:
        raise ValueError(str(e).replace("invalid URL", "not a valid URL", 1)) from None
    return value


def header(name: str, value: str) -> None:
    """Refuse a request header the requests Pulse makes would refuse; the text names the header,
    never its value (it may be a token)."""
    try:
        check_header(name, value)
    except urls.FetchError as e:
        reason = str(e).partition(": ")[2] or "it cannot be sent in an HTTP request"
        raise ValueError(f"the header {name!r} is not valid: {reason}") from None


def takes(model: BaseModel, names: Iterable[str], fields: Iterable[str], optional: Iterable[str], what: str) -> None:
    """Refuse a part that sets one of ``names`` its kind does not take (not in ``fields``), or
    leaves out one it needs (in ``fields`` but not ``optional``); ``what`` names the kind ("a slack
    channel")."""
    given = {name for name in names if getattr(model, name) is not None}
    allowed = set(fields)
    if given - allowed:
        raise ValueError(f"{what} does not take {', '.join(sorted(given - allowed))}")
    needed = allowed - set(optional)
    if needed - given:
        raise ValueError(f"{what} needs {', '.join(sorted(needed - given))}")


def unique(values: Iterable[str], what: str) -> None:
    """Refuse the second of two equal ``values``, naming ``what`` they are."""
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{what} {value!r} appears twice")
        seen.add(value)


def span(start: datetime, end: datetime, names: tuple[str, str] = ("start", "end")) -> None:
    """Refuse a stretch of time whose ends have no offset (a time zone), or that ends before it
    starts; ``names`` are the fields' names in the file."""
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError(f"{names[0]} and {names[1]} need an offset, such as 2026-12-01T02:00:00Z or ...-05:00")
    if end <= start:
        raise ValueError(f"{names[1]} must be after {names[0]}")


def parse_duration(value: Any) -> timedelta:
    """``30s``, ``5m``, ``1h30m``, ``500ms``, ``90d``, or a number of seconds (at most `MAX_DURATION`)."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 30s, 5m or 1h")
    if isinstance(value, int | float):
        seconds = value
    else:
        text = str(value).strip()
        if not text or len(text) > 100 or _DURATION.sub("", text):
            shown = text if len(text) <= 100 else text[:20] + "..."
            raise ValueError(f"{shown!r} is not a duration (use e.g. 30s, 5m, 1h30m)")
        units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
        seconds = sum(int(n) * units[unit] for n, unit in _DURATION.findall(text))
    try:
        seconds = float(seconds)
    except OverflowError:  # an integer too large for a float
        seconds = math.inf
    if not math.isfinite(seconds) or abs(seconds) > MAX_DURATION.total_seconds():
        raise ValueError(f"a duration must be finite and at most {MAX_DURATION.days} days")
    return timedelta(seconds=seconds)


def within(low: timedelta, high: timedelta) -> Callable[[timedelta], timedelta]:
    """A validator of durations between ``low`` and ``high``: a duration field is
    ``Annotated[timedelta, BeforeValidator(parse_duration), AfterValidator(within(low, high))]``."""

    def check(value: timedelta) -> timedelta:
        if not low <= value <= high:
            shown = show_duration(low), show_duration(high), show_duration(value)
            raise ValueError("must be between {} and {}, not {}".format(*shown))
        return value

    return check


def show_duration(value: timedelta) -> str:
    """A duration as the file writes it: ``24h``, ``5m``, ``90s``, ``0.5s``."""
    seconds = value.total_seconds()
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"


def path(loc: Iterable[Any], root: str = "") -> str:
    """``organizations[0].components[1].url`` from ``("organizations", 0, "components", 1, "url")``,
    after ``root`` (``$`` for a JSON body: ``$.url``)."""
    found = root
    for part in loc:
        found += f"[{part}]" if isinstance(part, int) else (f".{part}" if found else str(part))
    return found


def problem_lines(error: Mapping[str, Any], root: str = "") -> list[tuple[str, bool]]:
    """One pydantic error as lines ``<path>: <reason>``, each with whether it named a path inside
    the part refused. A part that finds several problems raises them one per line, each starting with
    its path inside the part (``layers[1].handoff: ...``), which is joined to the part's own;
    ``root`` starts every path (a part at the document's top is ``(file)`` without one)."""
    where = path(error["loc"], root)
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown field"
    lines: list[tuple[str, bool]] = []
    for line in message.splitlines():
        inner = bool(_INNER_PATH.match(line))
        lines.append((f"{where}.{line}" if where and inner else f"{where or '(file)'}: {line}", inner))
    return lines


def messages(errors: Sequence[Mapping[str, Any]], root: str = "$") -> list[str]:
    """Every line of pydantic's ``errors`` (`problem_lines`), each starting with its path."""
    return [line for error in errors for line, _ in problem_lines(error, root)]
