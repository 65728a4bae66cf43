"""What every command prints: a table's cells are shown as written, on a terminal or piped."""

import io

import pytest
from rich.console import Console

from pulse.cli import output

HOSTILE = ["Alice [/x]", "[link=https://evil.example]https://prometheus.acme.example[/link]", "[bold red]loud[/]"]


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "piped"])
def test_a_cell_is_never_read_as_markup(monkeypatch, terminal):
    written = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=written, force_terminal=terminal, width=300))
    monkeypatch.setattr(output, "Console", lambda **options: Console(file=written, **options))

    output.print_table(["name", "error", "note"], [HOSTILE])

    shown = written.getvalue()
    assert all(text in shown for text in HOSTILE)
    assert "\x1b]8;" not in shown  # no hyperlink
    assert "\x1b[1;31m" not in shown  # no bold red
