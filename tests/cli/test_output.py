"""What every command prints: a table's cells are shown as written, on a terminal or piped."""

import io
import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest
import rich.console
from rich.console import Console

from pulse.cli import output

HOSTILE = ["Alice [/x]", "[link=https://evil.example]https://prometheus.acme.example[/link]", "[bold red]loud[/]"]


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "piped"])
def test_a_cell_is_never_read_as_markup(monkeypatch, terminal):
    written = io.StringIO()
    monkeypatch.setattr(output, "console", lambda: Console(file=written, force_terminal=terminal, width=300))
    monkeypatch.setattr(rich.console, "Console", lambda **options: Console(file=written, **options))

    output.print_table(["name", "error", "note"], [HOSTILE])

    shown = written.getvalue()
    assert all(text in shown for text in HOSTILE)
    assert "\x1b]8;" not in shown  # no hyperlink
    assert "\x1b[1;31m" not in shown  # no bold red


ROW = {
    "key": "api",
    "name": 'Naïve "API" \u202e\n',
    "paused": False,
    "open": True,
    "checks": 12,
    "big": 2**70,
    "uptime": 99.93,
    "none": None,
    "nan": float("nan"),
    "infinite": float("-inf"),
    "incident": {"id": 1, "title": "down", "started_at": "2026-12-05T09:00:00+00:00"},
    "locations": {"eu": {"seen": "OPERATIONAL", "abstained": False, "ms": [1, 2.5, None]}, "us": {}},
    "empty": [],
    "when": datetime(2026, 12, 5, tzinfo=UTC),  # not JSON: as str()
    "amount": Decimal("1.50"),
}


@pytest.mark.parametrize(
    "data",
    [[ROW, {}, {"key": "www"}], [], [ROW] * 3, {"a": [ROW]}, [1, "two", None], [{1: "a key not text"}], "text"],
    ids=["rows", "none", "same rows", "a dict", "not rows", "a key not text", "text"],
)
def test_json_is_the_standard_librarys_indented_json(data):
    assert output.dumps(data) == json.dumps(data, indent=2, default=str)
