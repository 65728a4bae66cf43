"""`pulse calculated [ORG]`: each calculated metric's last value, its inputs and their ages."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import click

from pulse.cli.output import fail, print_json, print_table, settings


@click.command()
@click.argument("organization", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def calculated(organization: str | None, as_json: bool) -> None:
    """Each calculated metric (of ORGANIZATION, a slug, if given): its state (ok, warning,
    critical, no data, stale), its last value and the time of its oldest input, why it has no
    value, and each input with its value and age (stale when older than the metric's max_age)."""
    from pulse.calculated.queries import overview

    settings()
    try:
        rows = overview(organization)
    except LookupError as e:
        fail(str(e.args[0]), code=2)
    if as_json:
        print_json(rows)
        return
    print_table(
        ["metric", "state", "value", "as of", "inputs", "note"],
        [
            [
                f"{r['organization']}/{r['key']}",
                r["state"].replace("_", " "),
                None if r["last_value"] is None else f"{r['last_value']:g}{r['unit']}",
                r["as_of"] and r["as_of"][:19],
                ", ".join(_shown(i) for i in r["inputs"]),
                (r["note"] or "")[:100],
            ]
            for r in rows
        ],
    )


def _shown(given: dict[str, Any]) -> str:
    """``errors=3 (12s)``; ``errors=3 (7m2s, stale)``; ``errors=- (no value)``."""
    if given["value"] is None:
        return f"{given['name']}=- (no value)"
    from pulse.calculated.record import show_age

    shown = show_age(timedelta(seconds=given["age_seconds"]))
    return f"{given['name']}={given['value']:g} ({shown}{', stale' if given['stale'] else ''})"


COMMANDS = [calculated]
