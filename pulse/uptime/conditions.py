"""Uptime conditions in the Gatus language: `[STATUS] == 200`, `[BODY].db.latency_ms < 250`.

A condition is `LEFT OP RIGHT`, OP one of `==`, `!=`, `<`, `<=`, `>`, `>=` with whitespace on each
side. `parse` turns the text into a small tree once; `evaluate` checks it against a `Response`
without `eval`. The semantics are Gatus's (config/endpoint/condition.go, placeholder.go and
jsonpath/jsonpath.go in TwiN/gatus); the places where Pulse deliberately differs say "Unlike Gatus".

Placeholders (names are case-insensitive, as in Gatus):

- `[STATUS]`: the HTTP status code; 0 when there was no HTTP response.
- `[RESPONSE_TIME]`: the response time in whole milliseconds (truncated).
- `[BODY]`: the body as text, surrounding whitespace trimmed. `[BODY].a.b[0].c` and `[BODY][0].id`
  are JSON paths into it: dots for keys, `[n]` for array indexes.
- `[CONNECTED]`: `true` or `false`.
- `[IP]`: the IP the request connected to; empty when unknown.
- `[CERTIFICATE_EXPIRATION]`: time until the TLS certificate expires, in whole milliseconds; 0 for
  plain HTTP.
- `[DNS_RCODE]`: a DNS reply's response code (`NOERROR`, `NXDOMAIN`, `SERVFAIL`, `REFUSED`...);
  empty when there was no reply. Only dns checks resolve it (`pulse.uptime.kinds.dns`).
- `[CERTIFICATE_VALID]`: `true` when the certificate's chain and name verified, else `false`, shown
  with the reason (`[CERTIFICATE_VALID] (false: certificate has expired) == true`); tls checks only.
- `[PACKET_LOSS]`: of an icmp check, the echo requests without a reply, in percent rounded to a
  whole number (0 to 100). Not in Gatus.

Functions: `len(p)` and `has(p)` on any placeholder, either side; `pat(glob)` and `any(a, b, ...)`
on either side of `==` and `!=` (`any(200, 429) == [STATUS]` is `[STATUS] == any(200, 429)`).

Comparison:

- `==` and `!=` compare the resolved texts, except that two texts which both read as Go integer
  literals (`200`, `0x1F`, `0o17`, `017` octal, `1_000`) compare as integers. `1.0 == 1` is false.
  `any()` compares each comma-separated value, trimmed, as text. `pat()` is a Go `filepath.Match`
  glob: `*` any run of characters, `?` one character, `[a-z]`, `[^0-9]` classes, `\\` escapes.
  Unlike Gatus, a part between two `*` that has `?` or a class is at most 40 characters long, so
  that no pattern can take long on a large body (a part of plain characters may be any length).
- `<`, `<=`, `>`, `>=` compare numbers. A text reads as a Go duration first (`48h`, `1h30m`,
  `500ms`, and, unlike Go, days: `14d`; converted to milliseconds), then as a Go integer literal,
  then as a decimal number. A resolved value that is none of these counts as 0, as in Gatus; a
  literal that is none of these is rejected by `parse`. Unlike Gatus, which truncates decimals to
  integers, `0.3 < 0.5` holds.
- A JSON path that does not resolve (missing key, index out of range, JSON `null`, a step through
  a string, number or array, or a body that is not JSON) makes the condition fail whatever the
  operator, shown as `[BODY].a (INVALID)`. Unlike Gatus, `<` and `!=` do not pass on such a value
  (Gatus reads it as 0, or as the text "... (INVALID)"). `has()` reads it as `false`.

JSON values read as text the way Gatus prints them: strings as they are, `true`/`false`, numbers
in their shortest form (`1.0` reads `1`), objects as minified JSON with sorted keys. Unlike Gatus,
arrays read as minified JSON too (Gatus prints Go's `[a b]`), and large integers stay integers
(Gatus prints `1e+06`). `len()` gives an array's element count, otherwise the number of characters
of the text (an object's minified JSON, as Gatus documents); unlike Gatus, which counts UTF-8 bytes,
it counts characters. `len([BODY])` of a body that is not a JSON array is its trimmed length.

`Result.resolved` shows every placeholder resolved, `[STATUS] (503) == 200`, whether the condition
passed or not (Gatus hides them on success by default); values beside `pat()` are cut to 25
characters as in Gatus, others to 200 so a large body stays out of the database.

Unlike Gatus, `parse` rejects what Gatus would silently evaluate to a constant: a condition with no
placeholder (`STATUS == 200`), an unknown placeholder or function, a malformed JSON path or glob,
a literal that is not a number or duration beside `<`, and `has()`, `[CONNECTED]` or `[IP]` beside `<`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import operator as op
import re
from collections.abc import Callable
from fractions import Fraction
from typing import TypeAlias

from pulse.errors import ConfigError
from pulse.net import Response

MAX_LENGTH = 1000  # characters in a condition or a path

OPERATORS = ("==", "!=", "<", "<=", ">", ">=")
EQUALITY = ("==", "!=")
PLACEHOLDERS = (
    "[STATUS]",
    "[RESPONSE_TIME]",
    "[BODY]",
    "[CONNECTED]",
    "[IP]",
    "[CERTIFICATE_EXPIRATION]",
    "[DNS_RCODE]",
    "[CERTIFICATE_VALID]",
    "[PACKET_LOSS]",
)
GATUS_ONLY = ("[DOMAIN_EXPIRATION]", "[CONTEXT]")
FUNCTIONS = ("len", "has", "pat", "any")

PATTERN_SHOWN = 25  # characters of a value shown beside pat(), as Gatus
# A part of a pat() glob between two * is searched for in the whole value (up to a 1 MiB body): a
# part made of plain characters in one pass, a part with ? or [...] in time proportional to its
# width. Capping that width caps the worst pattern on the worst body (0.1 s at 40 on 2 cores).
WILD_PART_MAX = 40
VALUE_SHOWN = 200  # characters of any other resolved value shown in `Result.resolved`

_USE_OPERATOR = "use ==, !=, <, <=, >, >="
_USE_PLACEHOLDER = "use " + ", ".join(PLACEHOLDERS)

_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<": op.lt,
    "<=": op.le,
    ">": op.gt,
    ">=": op.ge,
}


class ConditionError(ConfigError, ValueError):
    """A condition or a JSON path that cannot be parsed. `str(e)` is "<the text>: <the reason>"."""

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason
        shown = text if len(text) <= MAX_LENGTH else text[:80] + "..."
        super().__init__(f"{shown}: {reason}")

    def __reduce__(self) -> tuple[type[ConditionError], tuple[str, str]]:
        return type(self), (self.text, self.reason)


class _ParseError(Exception):
    """Raised by the parsing helpers with a reason; `parse` adds the condition's text."""


# The tree.

Step: TypeAlias = str | int  # a key, or an array index


@dataclasses.dataclass(frozen=True)
class Placeholder:
    """An operand read from the response, e.g. `[STATUS]`, `[BODY].data[0].id`, `len([BODY].items)`."""

    text: str  # as written
    name: str  # upper case, e.g. "[BODY]"
    path: tuple[Step, ...] = ()  # for [BODY] only; () is the whole body
    function: str | None = None  # "len", "has" or None


@dataclasses.dataclass(frozen=True)
class Literal:
    """A value as written. Beside `<`, `<=`, `>`, `>=` it is read as a number once, at parse time."""

    text: str
    number: int | float | None = None  # milliseconds for a duration
    duration: bool = False


@dataclasses.dataclass(frozen=True)
class Glob:
    """`pat(...)`: the glob split on `*` into fixed-width chunks, each a regex of single characters.

    Matching tries each chunk at its leftmost place, which is exact for such chunks and linear
    enough that a hostile pattern cannot stall a worker on a large body.
    """

    text: str  # "pat(...)" as written
    chunks: tuple[re.Pattern[str], ...]
    widths: tuple[int, ...]  # characters each chunk matches
    has_star: bool
    anchored_start: bool  # the glob does not start with *
    anchored_end: bool  # the glob does not end with *

    def matches(self, value: str) -> bool:
        chunks = list(zip(self.chunks, self.widths, strict=True))
        if not self.has_star:
            chunk, width = chunks[0]
            return len(value) == width and chunk.match(value) is not None
        position = 0
        if self.anchored_start:
            chunk, width = chunks.pop(0)
            if chunk.match(value) is None:
                return False
            position = width
        last = chunks.pop() if self.anchored_end else None
        for chunk, _ in chunks:
            found = chunk.search(value, position)
            if found is None:
                return False
            position = found.end()
        if last is None:
            return True
        chunk, width = last
        start = len(value) - width
        return start >= position and chunk.match(value, start) is not None


@dataclasses.dataclass(frozen=True)
class AnyOf:
    """`any(a, b, ...)`: the values, trimmed."""

    text: str
    values: tuple[str, ...]


Operand: TypeAlias = Placeholder | Literal | Glob | AnyOf


@dataclasses.dataclass(frozen=True)
class Condition:
    """A parsed condition. Build it with `parse`."""

    text: str  # as written
    placeholders: frozenset[str]  # e.g. {"[STATUS]"}; {"[BODY]"} for any body path or function of it
    left: Operand
    operator: str
    right: Operand
    swapped: bool = False  # written with pat() or any() on the left: `left` is what was on the right

    @property
    def response_time_only(self) -> bool:
        """True when every placeholder the condition uses is [RESPONSE_TIME]."""
        return self.placeholders == {"[RESPONSE_TIME]"}


# Parsing.


@functools.lru_cache(maxsize=8192)
def parse(text: str) -> Condition:
    """Parse a condition such as `[BODY].status == UP`. Raises `ConditionError` with the reason.

    Results are cached by text: a condition stored as text can be parsed on every check.
    """
    try:
        return _parse(text)
    except _ParseError as e:
        raise ConditionError(text, str(e)) from None


def _parse(text: str) -> Condition:
    if len(text) > MAX_LENGTH:
        raise _ParseError(f"longer than {MAX_LENGTH} characters")
    if not text.strip():
        raise _ParseError("empty condition")
    start, end = _find_operator(text)
    operator = text[start:end]
    left_text, right_text = text[:start].strip(), text[end:].strip()
    if not left_text:
        raise _ParseError(f"nothing on the left of {operator}")
    if not right_text:
        raise _ParseError(f"nothing on the right of {operator}")
    # pat() and any() may stand on either side of == and != (as in Gatus): on the left, the sides swap.
    swapped = operator in EQUALITY and _is_call(left_text, "pat", "any") and not _is_call(right_text, "pat", "any")
    if swapped:
        left_text, right_text = right_text, left_text
    left = _operand(left_text, operator, right_side=False)
    right = _operand(right_text, operator, right_side=True)
    placeholders = frozenset(side.name for side in (left, right) if isinstance(side, Placeholder))
    if not placeholders:
        raise _ParseError(f"no placeholder: a condition reads the response through one ({_USE_PLACEHOLDER})")
    return Condition(text=text, placeholders=placeholders, left=left, operator=operator, right=right, swapped=swapped)


def _is_call(text: str, *names: str) -> bool:
    call = _CALL.match(text)
    return call is not None and call.group(1) in names


def _find_operator(text: str) -> tuple[int, int]:
    """The span of the one comparison operator outside brackets and parentheses."""
    runs = _top_level_operator_runs(text)

    def spaced(start: int, end: int) -> bool:
        return (start == 0 or text[start - 1].isspace()) and (end == len(text) or text[end].isspace())

    candidates = [(start, end) for start, end in runs if spaced(start, end)]
    valid = [(start, end) for start, end in candidates if text[start:end] in OPERATORS]
    if not valid:
        if any(o in text[start:end] for start, end in runs for o in OPERATORS) and not candidates:
            raise _ParseError(f"no comparison operator ({_USE_OPERATOR}, with a space on each side)")
        raise _ParseError(f"no comparison operator ({_USE_OPERATOR})")
    if len(valid) > 1:
        found = " and ".join(text[start:end] for start, end in valid)
        raise _ParseError(f"more than one comparison operator ({found})")
    for start, end in candidates:
        if (start, end) not in valid:
            raise _ParseError(f"{text[start:end]} is not a comparison operator ({_USE_OPERATOR})")
    return valid[0]


def _top_level_operator_runs(text: str) -> list[tuple[int, int]]:
    """Spans of `=!<>` characters outside brackets and parentheses; checks that those balance."""
    closing = {")": "(", "]": "["}
    opened: list[str] = []
    runs = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c in "([":
            opened.append(c)
        elif c in ")]":
            if not opened or opened[-1] != closing[c]:
                raise _ParseError(f"unbalanced {_brackets(c)}: {c!r} at character {i + 1} closes nothing")
            opened.pop()
        elif c in "=!<>" and not opened:
            end = i
            while end < len(text) and text[end] in "=!<>":
                end += 1
            runs.append((i, end))
            i = end
            continue
        i += 1
    if opened:
        raise _ParseError(f"unbalanced {_brackets(opened[-1])}: {opened[-1]!r} is never closed")
    return runs


def _brackets(c: str) -> str:
    return "parentheses" if c in "()" else "brackets"


_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(")
_NAME = re.compile(r"\[([A-Za-z_]+)\]")


def _operand(text: str, operator: str, *, right_side: bool) -> Operand:
    call = _CALL.match(text)
    if call:
        return _function(text, call.group(1), operator, right_side=right_side)
    if _NAME.match(text):
        placeholder = _placeholder(text)
        _check_ordering(placeholder, operator)
        return placeholder
    return _literal(text, operator)


def _function(text: str, name: str, operator: str, *, right_side: bool) -> Operand:
    if name not in FUNCTIONS:
        raise _ParseError(f"unknown function {name}() (use len, has, pat, any)")
    if _closing_parenthesis(text, len(name)) != len(text) - 1:
        raise _ParseError(f"unexpected text after the closing parenthesis of {name}()")
    argument = text[len(name) + 1 : -1]
    if name in ("len", "has"):
        inner = argument.strip()
        if not _NAME.match(inner):
            raise _ParseError(f"{name}() takes a placeholder, e.g. {name}([BODY].items)")
        read = _placeholder(inner)
        placeholder = Placeholder(text=text, name=read.name, path=read.path, function=name)
        _check_ordering(placeholder, operator)
        return placeholder
    if operator not in EQUALITY:
        raise _ParseError(f"{name}() works only with == and !=")
    if not right_side:  # both sides are pat() or any()
        raise _ParseError(f"{name}() compares with a placeholder on the other side, e.g. [IP] {operator} {name}(...)")
    if name == "pat":
        return _glob(text, argument)
    values = tuple(value.strip() for value in argument.split(","))
    if not all(values):
        raise _ParseError("any() takes values separated by commas, none of them empty, e.g. any(200, 204)")
    return AnyOf(text=text, values=values)


def _closing_parenthesis(text: str, opening: int) -> int:
    depth = 0
    i = opening
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1  # not reached: brackets were checked to balance


def _placeholder(text: str) -> Placeholder:
    found = _NAME.match(text)
    if not found:
        raise _ParseError(f"{text!r} is not a placeholder ({_USE_PLACEHOLDER})")
    name = found.group().upper()
    rest = text[found.end() :]
    if name == "[BODY]":
        return Placeholder(text=text, name=name, path=_steps(rest))
    if name in PLACEHOLDERS:
        if rest:
            raise _ParseError(f"{name} takes no JSON path (only [BODY] does)")
        return Placeholder(text=text, name=name)
    if name in GATUS_ONLY:
        raise _ParseError(f"{found.group()} is a Gatus placeholder that Pulse does not support ({_USE_PLACEHOLDER})")
    raise _ParseError(f"unknown placeholder {found.group()} ({_USE_PLACEHOLDER})")


def _check_ordering(placeholder: Placeholder, operator: str) -> None:
    if operator in EQUALITY:
        return
    if placeholder.function == "has":
        raise _ParseError(f"has() is true or false: compare it with == or !=, not {operator}")
    if placeholder.function is None and placeholder.name == "[CONNECTED]":
        raise _ParseError(f"[CONNECTED] is true or false: compare it with == or !=, not {operator}")
    if placeholder.function is None and placeholder.name == "[CERTIFICATE_VALID]":
        raise _ParseError(f"[CERTIFICATE_VALID] is true or false: compare it with == or !=, not {operator}")
    if placeholder.function is None and placeholder.name == "[IP]":
        raise _ParseError(f"[IP] is an address: compare it with == or != (pat() and any() help), not {operator}")


_KEY = re.compile(r"[^.\[\]()\s]+")
_INDEX = re.compile(r"\[(\d+)\]")


def _steps(path: str) -> tuple[Step, ...]:
    """The steps of a JSON path after [BODY]: `.key` and `[index]`, Gatus's `.[index]` too."""
    steps: list[Step] = []
    i = 0
    while i < len(path):
        if path[i] == ".":
            i += 1
            if path.startswith("[", i):
                continue
            key = _KEY.match(path, i)
            if key is None:
                raise _ParseError(f"malformed JSON path: {_key_problem(path, i)}")
            steps.append(key.group())
            i = key.end()
        elif path[i] == "[":
            index = _INDEX.match(path, i)
            if index is None:
                raise _ParseError(f"malformed JSON path: {_index_problem(path, i)}")
            steps.append(int(index.group(1)))
            i = index.end()
        elif path[i].isspace():
            raise _ParseError("malformed JSON path: a key cannot contain spaces")
        else:
            raise _ParseError(f"malformed JSON path: expected '.' or '[' before {path[i:]!r}")
    return tuple(steps)


def _key_problem(path: str, i: int) -> str:
    if i == len(path):
        return "it ends with '.'"
    if path[i] == ".":
        return "an empty key between two dots"
    if path[i].isspace():
        return "a key cannot contain spaces"
    return f"{path[i]!r} cannot start a key"


def _index_problem(path: str, i: int) -> str:
    end = path.find("]", i)
    inside = path[i + 1 : end] if end != -1 else path[i + 1 :]
    if inside.startswith("-") and inside[1:].isdigit():
        return f"negative array index [{inside}]"
    return f"an array index is a whole number, e.g. [0], not [{inside}]"


@functools.lru_cache(maxsize=1024)
def parse_path(path: str) -> tuple[Step, ...]:
    """Parse a JSON path such as `[BODY].db.latency_ms` into its steps, e.g. ("db", "latency_ms").

    Keys are strings and array indexes integers; `[BODY]` alone gives (). Raises `ConditionError`.
    """
    try:
        if len(path) > MAX_LENGTH:
            raise _ParseError(f"longer than {MAX_LENGTH} characters")
        text = path.strip()
        found = _NAME.match(text)
        if not found or found.group().upper() != "[BODY]":
            raise _ParseError("a JSON path starts with [BODY], e.g. [BODY].db.latency_ms")
        return _steps(text[found.end() :])
    except _ParseError as e:
        raise ConditionError(path, str(e)) from None


def _literal(text: str, operator: str) -> Literal:
    if operator in EQUALITY:
        return Literal(text=text)
    milliseconds = _duration_ms(text)
    if milliseconds is not None:
        return Literal(text=text, number=milliseconds, duration=True)
    number = _number(text)
    if number is not None:
        return Literal(text=text, number=number)
    if re.match(r"[-+]?\.?\d", text):
        raise _ParseError(f"bad number or duration {text!r} (duration units are ns, us, ms, s, m, h, d, e.g. 1h30m)")
    raise _ParseError(f"{text!r} is not a number or a duration, so {operator} cannot compare it")


def _glob(text: str, glob: str) -> Glob:
    """Compile a `filepath.Match` glob: `*`, `?`, `[...]` classes (`^` negates), `\\` escapes."""
    if not glob:
        raise _ParseError("pat() takes a pattern, e.g. pat(2*)")
    chunks: list[list[str]] = []
    current: list[str] = []
    has_star = ends_with_star = False
    i = 0
    while i < len(glob):
        c = glob[i]
        ends_with_star = c == "*"
        if c == "*":
            has_star = True
            if current:
                chunks.append(current)
                current = []
        elif c == "?":
            current.append(".")
        elif c == "\\":
            if i + 1 == len(glob):
                raise _ParseError("bad pattern: it ends with a lone '\\'")
            i += 1
            current.append(re.escape(glob[i]))
        elif c == "[":
            atom, i = _glob_class(glob, i)
            current.append(atom)
            continue
        else:
            current.append(re.escape(c))
        i += 1
    if current:
        chunks.append(current)
    for chunk in chunks:
        if len(chunk) > WILD_PART_MAX and any(atom == "." or atom.startswith("[") for atom in chunk):
            raise _ParseError(
                f"bad pattern: a part between two * with ? or [...] may be at most {WILD_PART_MAX} characters long"
            )
    return Glob(
        text=text,
        chunks=tuple(re.compile("".join(chunk), re.DOTALL) for chunk in chunks),
        widths=tuple(len(chunk) for chunk in chunks),
        has_star=has_star,
        anchored_start=not glob.startswith("*"),
        anchored_end=not ends_with_star,
    )


def _glob_class(glob: str, i: int) -> tuple[str, int]:
    """The regex for the class `[...]` that starts at `glob[i]`, and the index after it."""
    i += 1
    negate = glob.startswith("^", i)
    if negate:
        i += 1
    ranges: list[str] = []
    while True:
        if i < len(glob) and glob[i] == "]" and ranges:
            return "[" + ("^" if negate else "") + "".join(ranges) + "]", i + 1
        low, i = _glob_char(glob, i)
        high = low
        if glob.startswith("-", i):
            high, i = _glob_char(glob, i + 1)
            if high < low:
                raise _ParseError(f"bad pattern: the range {low}-{high} is reversed")
        ranges.append(re.escape(low) if low == high else f"{re.escape(low)}-{re.escape(high)}")


def _glob_char(glob: str, i: int) -> tuple[str, int]:
    if i >= len(glob):
        raise _ParseError("bad pattern: '[' is never closed")
    if glob[i] in "-]":
        raise _ParseError(f"bad pattern: {glob[i]!r} in a [...] class needs a '\\' before it")
    if glob[i] == "\\":
        i += 1
        if i >= len(glob):
            raise _ParseError("bad pattern: '[' is never closed")
    return glob[i], i + 1


# Numbers and durations, read as Go reads them.

_GO_INT = re.compile(
    r"[-+]?(?:0[xX](?:_?[0-9a-fA-F])+|0[bB](?:_?[01])+|0[oO](?:_?[0-7])+|0(?:_?[0-7])*|[1-9](?:_?[0-9])*)"
)
# Possessive quantifiers (++, *+, ?+) never give back what they matched: a resolved value is a whole
# response body, and a long run of digits followed by a letter must fail in one pass, not by trying
# every way to split the run (cubic: 8,000 digits took 3 s, a 1 MiB body would take hours).
_DECIMAL = re.compile(r"[-+]?+(?:\d++(?:\.\d*+)?+|\.\d++)(?:[eE][-+]?+\d++)?+")
# Go accepts both micro signs, \u00b5 and \u03bc.
_DURATION = re.compile(r"[-+]?+(?:(?:\d++(?:\.\d*+)?+|\.\d++)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h|d))++")
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h|d)")
_NANOSECONDS = {
    "ns": 1,
    "us": 10**3,
    "\u00b5s": 10**3,
    "\u03bcs": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
    "d": 86400 * 10**9,  # not Go's: days, as `[CERTIFICATE_EXPIRATION] > 14d` reads
}
_LONGEST_NUMBER = 100  # characters: longer texts are not read as integers


def _go_int(text: str) -> int | None:
    """The value of a Go integer literal (`strconv.ParseInt(s, 0, 64)` syntax), or None."""
    if text.isascii() and text.isdigit() and (len(text) == 1 or text[0] != "0") and len(text) <= _LONGEST_NUMBER:
        return int(text)  # the common case, decimal digits
    if len(text) > _LONGEST_NUMBER or not _GO_INT.fullmatch(text):
        return None
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-").replace("_", "")
    prefix = digits[:2].lower()
    if prefix in ("0x", "0b", "0o"):
        return sign * int(digits[2:], {"0x": 16, "0b": 2, "0o": 8}[prefix])
    if len(digits) > 1 and digits.startswith("0"):
        return sign * int(digits, 8)  # Go reads a leading 0 as octal
    return sign * int(digits)


def _number(text: str) -> int | float | None:
    """A Go integer literal or a finite decimal number, or None."""
    integer = _go_int(text)
    if integer is not None:
        return integer
    if _DECIMAL.fullmatch(text):
        value = float(text)
        if math.isfinite(value):
            return value
    return None


def _duration_ms(text: str) -> int | float | None:
    """A Go duration with units (`1h30m`, `500ms`, `-1.5h`) in milliseconds, or None."""
    if len(text) > _LONGEST_NUMBER or not _DURATION.fullmatch(text):
        return None
    nanoseconds = Fraction(0)
    for amount, unit in _DURATION_PART.findall(text):
        nanoseconds += Fraction(amount) * _NANOSECONDS[unit]
    if nanoseconds >= 2**63:  # Go's limit, about 292 years
        return None
    milliseconds = nanoseconds / 10**6 * (-1 if text.startswith("-") else 1)
    return int(milliseconds) if milliseconds.denominator == 1 else float(milliseconds)


def _to_number(text: str) -> int | float:
    """A resolved value for <, <=, >, >=: a duration in ms, a number, or 0 (as Gatus)."""
    milliseconds = _duration_ms(text)
    if milliseconds is not None:
        return milliseconds
    number = _number(text)
    return 0 if number is None else number


def _number_text(number: int | float) -> str:
    if isinstance(number, float) and number.is_integer() and abs(number) < 1e21:
        return str(int(number))
    return str(number) if isinstance(number, int) else repr(number)


def _duration_text(milliseconds: int | float, *, whole_seconds: bool = False) -> str:
    """Milliseconds shown as a Go duration without trailing zero units: `336h`, `1h30m`, `1h0m15s`, `1.5s`.

    With `whole_seconds`, as Gatus shows a certificate's expiration, fractions of a second are dropped.
    """
    sign = "-" if milliseconds < 0 else ""
    milliseconds = abs(milliseconds)
    if whole_seconds:
        milliseconds = milliseconds // 1000 * 1000
    if milliseconds == 0:
        return "0s"
    if milliseconds < 1000:
        return f"{sign}{_number_text(milliseconds)}ms"
    hours, rest = divmod(int(milliseconds // 1000), 3600)
    minutes, seconds = divmod(rest, 60)
    fraction = _number_text(milliseconds % 1000 / 1000)[1:] if milliseconds % 1000 else ""  # ".5"
    parts = [(str(hours), "h"), (str(minutes), "m"), (f"{seconds}{fraction}", "s")]
    while parts[0][0] == "0":
        parts.pop(0)
    while parts[-1][0] == "0":
        parts.pop()
    return sign + "".join(amount + unit for amount, unit in parts)


# Evaluation.


@dataclasses.dataclass(frozen=True)
class Result:
    """The outcome of one condition against one response."""

    condition: str  # the text
    success: bool
    resolved: str  # e.g. "[STATUS] (503) == 200"

    def as_dict(self) -> dict[str, str | bool]:
        return {"condition": self.condition, "success": self.success, "resolved": self.resolved}


def evaluate(condition: Condition, response: Response) -> Result:
    """Evaluate a parsed condition against a response. Never raises for any response."""
    left, right = _resolve(condition.left, response), _resolve(condition.right, response)
    operator = condition.operator
    if operator in EQUALITY:
        success = left is not None and right is not None and _same(left, right, condition.right) == (operator == "==")
    else:
        left_number, right_number = _operand_number(condition.left, left), _operand_number(condition.right, right)
        success = left_number is not None and right_number is not None and _COMPARE[operator](left_number, right_number)
        left, right = _number_shown(condition.left, left_number), _number_shown(condition.right, right_number)
    left, right = _noted(condition.left, left, response), _noted(condition.right, right, response)
    limit = PATTERN_SHOWN if isinstance(condition.right, Glob) else VALUE_SHOWN
    sides = [_shown(condition.left, left, limit), _shown(condition.right, right, VALUE_SHOWN)]
    if condition.swapped:
        sides.reverse()
    resolved = f"{sides[0]} {operator} {sides[1]}"
    return Result(condition=condition.text, success=success, resolved=resolved)


def _same(left: str, right: str, right_operand: Operand) -> bool:
    if isinstance(right_operand, Glob):
        return right_operand.matches(left)
    if isinstance(right_operand, AnyOf):
        return left in right_operand.values
    left_int, right_int = _go_int(left), _go_int(right)
    if left_int is not None and right_int is not None:
        return left_int == right_int
    return left == right


def _operand_number(operand: Operand, value: str | None) -> int | float | None:
    """The number an operand of <, <=, >, >= stands for; None for a path that does not resolve."""
    if isinstance(operand, Literal) and operand.number is not None:
        return operand.number
    return None if value is None else _to_number(value)


def _number_shown(operand: Operand, number: int | float | None) -> str | None:
    """A number as Gatus shows it beside <, <=, >, >=: a duration for durations, else the number."""
    if number is None:
        return None
    if isinstance(operand, Literal) and operand.duration:
        return _duration_text(number)
    if isinstance(operand, Placeholder) and operand.name == "[CERTIFICATE_EXPIRATION]" and not operand.function:
        return _duration_text(number, whole_seconds=True)
    return _number_text(number)


def _noted(operand: Operand, value: str | None, response: Response) -> str | None:
    """A value with the reason that goes with it: `[CERTIFICATE_VALID]`'s false with why."""
    problem = response.certificate_problem
    if value != "false" or not problem or not isinstance(operand, Placeholder) or operand.function:
        return value
    return f"false: {problem}" if operand.name == "[CERTIFICATE_VALID]" else value


def _shown(operand: Operand, value: str | None, limit: int) -> str:
    """An operand as Gatus shows it: `[STATUS] (503)`, `[BODY].a (INVALID)`, or as written."""
    if value is None:
        return f"{operand.text} (INVALID)"
    if value == operand.text:
        return operand.text
    if len(value) > limit:
        value = value[:limit] + "...(truncated)"
    return f"{operand.text} ({value})"


def _resolve(operand: Operand, response: Response) -> str | None:
    """The operand's value as text; None for a JSON path that does not resolve."""
    if not isinstance(operand, Placeholder):
        return operand.text
    if operand.name == "[BODY]":
        return _resolve_body(operand, response)
    value = _SIMPLE[operand.name](response)
    function = operand.function
    if function == "has":
        return _bool(value != "")
    if function == "len":
        return str(len(value))
    return value


def _resolve_body(operand: Placeholder, response: Response) -> str | None:
    function = operand.function
    if operand.path:
        value = _walk(_document(response), operand.path)
        if function == "has":
            return _bool(value is not None)
        if value is None:
            return None
        if function == "len":
            return str(len(value) if isinstance(value, list) else len(_render(value)))
        return _render(value)
    text = response.text.strip()
    if function == "has":
        return _bool(text != "")
    if function == "len":
        document = _document(response) if text.startswith("[") else None
        return str(len(document) if isinstance(document, list) else len(text))
    return text


def _bool(value: bool) -> str:
    return "true" if value else "false"


_SIMPLE: dict[str, Callable[[Response], str]] = {
    "[STATUS]": lambda r: str(r.status or 0),
    "[RESPONSE_TIME]": lambda r: str(int(r.response_time_ms)),
    "[CONNECTED]": lambda r: _bool(r.connected),
    "[IP]": lambda r: r.ip or "",
    "[CERTIFICATE_EXPIRATION]": lambda r: str(int(r.certificate_expiration_ms or 0)),
    "[DNS_RCODE]": lambda r: r.dns_rcode or "",
    "[CERTIFICATE_VALID]": lambda r: _bool(r.certificate_valid is True),
    "[PACKET_LOSS]": lambda r: str(round(r.packet_loss or 0)),
}


# The body, decoded once per response.

_NOT_JSON = object()


def _document(response: Response) -> object:
    """The body parsed as JSON, or `_NOT_JSON`."""
    if "json" not in response.memo:
        response.memo["json"] = _parse_json(response.text)
    return response.memo["json"]


def _json_float(text: str) -> int | float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text}")
    return int(value) if value.is_integer() and abs(value) < 1e21 else value


def _json_constant(text: str) -> object:
    raise ValueError(f"not JSON: {text}")


def _parse_json(text: str) -> object:
    try:
        return json.loads(text, parse_float=_json_float, parse_constant=_json_constant)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _walk(document: object, path: tuple[Step, ...]) -> object | None:
    """The value at the path; None when a step is missing or the value is JSON null."""
    if document is _NOT_JSON:
        return None
    value = document
    for step in path:
        if isinstance(step, int):
            if not isinstance(value, list) or step >= len(value):
                return None
            value = value[step]
        elif isinstance(value, dict):
            value = value.get(step)
        else:
            return None
        if value is None:
            return None
    return value


def _render(value: object) -> str:
    """A JSON value as text, the way Gatus prints it (arrays as JSON, unlike Gatus)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return _bool(value)
    if isinstance(value, int | float):
        return _number_text(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def extract(path: str, body: bytes | Response) -> object | None:
    """The value at a JSON path like `[BODY].db.latency_ms`, as decoded from JSON.

    None when the path does not resolve, the value is null, or the body is not JSON. Pass the
    `Response` rather than its body to reuse the JSON its conditions already parsed. A malformed
    path raises `ConditionError`.
    """
    steps = parse_path(path)
    if isinstance(body, Response):
        document = _document(body)
    else:
        document = _parse_json(body.decode("utf-8", errors="replace"))
    return _walk(document, steps)
