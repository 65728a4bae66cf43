"""What every command shares: the settings, one-line failures, JSON and tables on stdout.

Every text shown goes through `pulse.terminal.printable`, so no escape sequence in a name, a title
or a provider's reply acts on the terminal. Nor is any of it read as rich markup: a table's cells
are `rich.text.Text`, shown as written, so ``[/x]`` is no error and ``[link=...]`` no hyperlink.
"""

from __future__ import annotations

import functools
import json
import sys
from json.encoder import encode_basestring_ascii as _string
from typing import TYPE_CHECKING, Any, NoReturn

import click

from pulse.config import Settings, get_settings
from pulse.terminal import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

LIMIT = click.IntRange(1, 100_000)  # the type of a listing's --limit


def echo(text: str, *, err: bool = False) -> None:
    """Print a line on stdout (stderr with ``err``), made `printable`."""
    click.echo(printable(text), err=err)


def fail(text: str, code: int = 1) -> NoReturn:
    """Print ``pulse: text`` on stderr and exit with ``code`` (2: usage or configuration)."""
    echo(f"pulse: {text}", err=True)
    sys.exit(code)


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [""])[0]


def settings() -> Settings:
    """Settings, with the database bound (connections open on first use)."""
    from pulse.db import db, setup_database

    current = get_settings()
    if db.obj is None:
        setup_database(current)
    return current


def print_json(data: Any) -> None:
    """``data`` as indented JSON on stdout. Written as is: JSON escapes every control character, so
    there is no escape sequence for click.echo to strip, and looking for them took it 50 ms over
    `pulse status --json` at 20,000 components."""
    sys.stdout.write(dumps(data) + "\n")


def dumps(data: Any) -> str:
    """``json.dumps(data, indent=2, default=str)``: the same text, sooner for a list of rows (dicts
    with text keys, as listings print). The standard library indents in pure Python, value by
    value (0.2 s of `pulse status` at 20,000 components); here each row's plain values (text,
    numbers, booleans, null) are written at once, and the rest by `json.dumps` in place."""
    if not isinstance(data, list) or not data:
        return json.dumps(data, indent=2, default=str)
    keys: dict[str, str] = {}
    rows = []
    for row in data:
        if not isinstance(row, dict) or not all(k.__class__ is str for k in row):
            return json.dumps(data, indent=2, default=str)
        if not row:
            rows.append("  {}")
            continue
        fields = []
        for k, v in row.items():
            key = keys.get(k) or keys.setdefault(k, f"    {_string(k)}: ")
            if v is None:
                fields.append(key + "null")
            elif v is True or v is False:
                fields.append(key + ("true" if v else "false"))
            elif v.__class__ is str:
                fields.append(key + _string(v))
            elif v.__class__ is int or (v.__class__ is float and v - v == 0):  # finite: no NaN, no Infinity
                fields.append(key + repr(v))
            else:  # nested, or for `default`: indented as it would be in place, two levels down
                fields.append(key + json.dumps(v, indent=2, default=str).replace("\n", "\n    "))
        rows.append("  {\n" + ",\n".join(fields) + "\n  }")
    return "[\n" + ",\n".join(rows) + "\n]"


@functools.cache
def console() -> Console:
    """stdout's console. rich loads when a table is printed: JSON needs none of it."""
    from rich.console import Console

    return Console()


def print_table(columns: list[str], rows: list[list[Any]]) -> None:
    """A table of plain cells, shown as written (never as markup): fitted to a terminal, whole
    lines when piped."""
    from rich.table import Table

    table = Table(*columns, box=None, header_style="bold")
    for row in rows:
        table.add_row(*(cell(v) for v in row))
    print_whole(table)


def cell(value: Any) -> Text:
    """A table cell that shows ``value`` as written, on one line: "-" for None."""
    from rich.text import Text

    return Text("-" if value is None else printable(str(value), one_line=True))


def print_whole(table: Table) -> None:
    """Fit the table to the terminal; elsewhere (a pipe, a file), print each row on one line."""
    from rich.console import Console

    if console().is_terminal:
        console().print(table)
        return
    Console(width=natural_width(table)).print(table)


def natural_width(table: Table) -> int:
    """The width the table takes when nothing is cut."""
    return console().measure(table, options=console().options.update_width(100_000)).maximum
