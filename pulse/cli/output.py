"""What every command shares: the settings, one-line failures, JSON and tables on stdout."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.table import Table

from pulse.config import Settings, get_settings

console = Console()


def fail(text: str, code: int = 1) -> NoReturn:
    """Print ``pulse: text`` on stderr and exit with ``code`` (2: usage or configuration)."""
    click.echo(f"pulse: {text}", err=True)
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
    click.echo(json.dumps(data, indent=2, default=str))


def print_table(columns: list[str], rows: list[list[Any]]) -> None:
    table = Table(*columns, box=None, header_style="bold")
    for row in rows:
        table.add_row(*("-" if v is None else str(v) for v in row))
    console.print(table)


def print_whole(table: Table) -> None:
    """Fit the table to the terminal; elsewhere (a pipe, a file), print each row on one line."""
    if console.is_terminal:
        console.print(table)
        return
    Console(width=natural_width(table)).print(table)


def natural_width(table: Table) -> int:
    """The width the table takes when nothing is cut."""
    return console.measure(table, options=console.options.update_width(100_000)).maximum
