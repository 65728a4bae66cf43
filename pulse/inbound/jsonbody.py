"""JSON bodies that arrive from outside, read so that what is kept fits PostgreSQL: `loads`, and
`storable` for a text of any other kind (a form's field).

Python's ``json`` takes what PostgreSQL refuses to store: ``NaN``, ``Infinity`` and ``-Infinity``
(and numbers past the largest float, which Python reads as an infinity), texts holding NUL
(``\\u0000``) or a lone surrogate (``\\ud800``), and nesting a thousand levels deep. Stored as they
came, they would fail the statement that records them, and a sender that retries on 5xx
(Alertmanager does, for ever) would never be recorded. So:

- a body that is not UTF-8, not JSON, nested more than `MAX_DEPTH` levels, or holding a number that
  is not finite is refused (`BodyError`, naming the problem and, for the last two, its JSON path):
  its sender has to change it, and a 400 tells it so;
- a NUL or a lone surrogate in any text (object keys included) is replaced with U+FFFD, and
  counted: the event is kept, and says how many characters were replaced.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 64  # levels of arrays and objects: a sender's own fields nest 4 to 6 deep
REPLACEMENT = "\ufffd"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a key shown as .name in a path; any other as ["..."]
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")  # a surrogate left in a str is a lone one: json pairs the others


class BodyError(ValueError):
    """A body refused: the message says what is wrong with it, never what it holds."""


def loads(body: bytes) -> tuple[Any, int]:
    """The JSON value of ``body``, and how many characters of its texts were replaced with U+FFFD.
    Raises `BodyError`."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BodyError(f"the body is not UTF-8 (byte 0x{body[e.start]:02x} at offset {e.start})") from None
    try:
        value = json.loads(text)
    except RecursionError:
        raise BodyError(f"the body is nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as e:
        raise BodyError(f"the body is not JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    except ValueError:  # an integer past Python's 4,300 digits
        raise BodyError("the body is not JSON that can be read: an integer of over 4,300 digits") from None
    replaced = [0]
    try:
        value = _clean(value, 0, replaced)
    except _RefusedError as e:
        raise BodyError(f"{_path(reversed(e.path))} {e.args[0]}") from None
    return value, replaced[0]


def storable(text: str) -> tuple[str, int]:
    """``text`` with each NUL and lone surrogate replaced with U+FFFD, and how many were."""
    if text.isascii() and "\x00" not in text:
        return text, 0
    return _UNSTORABLE.subn(REPLACEMENT, text)


class _RefusedError(Exception):
    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.path: list[str | int] = []  # from the value refused up to the body


def _clean(value: Any, depth: int, replaced: list[int]) -> Any:
    """``value`` made storable, in place where it is a container (`loads`); recursion at most
    `MAX_DEPTH` deep, as deeper is refused first."""
    if isinstance(value, str):
        text, count = storable(value)
        replaced[0] += count
        return text
    if isinstance(value, float) and not math.isfinite(value):
        raise _RefusedError("is not a finite number (NaN, Infinity, or past the largest float): JSON has none")
    if not isinstance(value, dict | list):
        return value
    if depth >= MAX_DEPTH:
        raise _RefusedError(f"nests more than {MAX_DEPTH} levels deep")
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        try:
            cleaned = _clean(item, depth + 1, replaced)
        except _RefusedError as e:
            e.path.append(key)
            raise
        if cleaned is not item:
            value[key] = cleaned
    if isinstance(value, dict) and not all(key.isascii() and "\x00" not in key for key in value):
        cleaned_keys = {}
        for key, item in value.items():
            text, count = storable(key)
            replaced[0] += count
            cleaned_keys[text] = item
        return cleaned_keys
    return value


def _path(parts: Any) -> str:
    """``$.alerts[0].labels.team`` from ``["alerts", 0, "labels", "team"]``."""
    path = "$"
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _NAME.fullmatch(part):
            path += f".{part[:100]}"
        else:
            path += f"[{json.dumps(storable(part)[0][:100])}]"
    return path
