"""Text shown on a terminal, by the command line and the demo alike.

A name, a title or a provider's reply may hold terminal escape sequences (to retitle or clear the
screen) or bidirectional overrides (to disguise what it says): `printable` shows them as ``\\xNN``
or ``\\uNNNN`` instead of letting them act on the terminal.
"""

from __future__ import annotations

import re

# C0 and C1 control characters (but tab and newline), DEL, and the bidirectional controls.
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNPRINTABLE = re.compile(f"[{_CONTROLS}]")
_UNPRINTABLE_IN_A_CELL = re.compile(f"[\\t\\n{_CONTROLS}]")


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` that cannot act on a terminal: each control character shown as its escape.
    ``one_line`` also escapes tabs and newlines (a table cell, a listing of one line per row)."""
    pattern = _UNPRINTABLE_IN_A_CELL if one_line else _UNPRINTABLE
    return pattern.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
