"""`pulse status`: each component's kind, status (colored on a terminal), last check, response time,
uptime over 24 hours, 7 and 30 days, the time nobody checked it in the last 24 hours, and open
incident."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from pulse.cli.output import cell, console, fail, natural_width, print_json, print_whole, settings
from pulse.components.status import DEGRADED, MAINTENANCE, MAJOR_OUTAGE, OPERATIONAL, PARTIAL_OUTAGE

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text


@click.command()
@click.argument("organization", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(organization: str | None, as_json: bool) -> None:
    """Each component (of ORGANIZATION, a slug, if given): how it is checked (an endpoint's kind:
    http, tcp…; heartbeat for a heartbeat monitor), status, last check, last response time,
    uptime over 24 hours, 7 and 30 days (the share of checks that passed, slow ones included), the
    time its slots went unchecked in the last 24 hours (Pulse was not checking: left out of uptime;
    --json gives 7 and 30 days too) and open incident. A heartbeat monitor shows its last ping and
    its next deadline instead of its last check and response time, and after the deadline its cron
    expression and time zone if it has them."""
    from pulse.models import utcnow
    from pulse.uptime.overview import overview

    settings()
    try:
        rows = overview(organization)
    except LookupError as e:
        fail(str(e.args[0]), code=2)
    if as_json:
        print_json(rows)
        return
    now = utcnow()
    shown = table(rows, now, narrow=False)
    if console().is_terminal and natural_width(shown) > console().width:
        shown = table(rows, now, narrow=True)
    print_whole(shown)


COMMANDS = [status]

STATUS_STYLES = {
    OPERATIONAL: "green",
    DEGRADED: "yellow",
    PARTIAL_OUTAGE: "red",
    MAJOR_OUTAGE: "red",
    MAINTENANCE: "blue",
}
SHORT_STATUSES = {DEGRADED: "DEGRADED", MAINTENANCE: "MAINTENANCE"}  # on a narrow terminal


def table(rows: list[dict[str, Any]], now: datetime, narrow: bool) -> Table:
    """The rows of `pulse.uptime.overview.overview` as a table. Names and incident titles wrap to fit the
    terminal (rich narrows wrapping columns first); components, statuses and figures never do.
    ``narrow``: for a terminal too narrow even so, no names and shorter statuses, and the unknown
    time only when some component has some."""
    from rich.table import Column, Table

    names = [] if narrow else [Column("name")]
    unknown = not narrow or any(row["unknown_24h_s"] for row in rows)
    figures = ["checked", "response", "up 24h", "up 7d", "up 30d"] + (["unknown 24h"] if unknown else [])
    shown = Table(
        Column("component", no_wrap=True),
        *names,
        Column("kind", no_wrap=True),
        Column("status", no_wrap=True),
        *(Column(name, justify="right", no_wrap=True) for name in figures),
        Column("incident" if narrow else "open incident"),
        box=None,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
        header_style="bold",
    )
    for row in rows:
        shown.add_row(*cells(row, now, narrow, unknown))
    return shown


def cells(r: dict[str, Any], now: datetime, narrow: bool, unknown: bool) -> list[Text]:
    from rich.text import Text

    checked = r["last_checked_at"] and datetime.fromisoformat(r["last_checked_at"])
    response = None if r["last_response_time_ms"] is None else f"{r['last_response_time_ms']} ms"
    if r["type"] == "HEARTBEAT":
        checked = r["last_ping_at"] and datetime.fromisoformat(r["last_ping_at"])
        response = r["deadline_at"] and "due " + until(datetime.fromisoformat(r["deadline_at"]), now)
        if r["cron"]:
            response = f"{response or 'no deadline'}, cron {r['cron']} {r['time_zone']}"
    shown = status_text(r)
    if narrow:
        shown.plain = shown.plain.replace(r["status"], SHORT_STATUSES.get(r["status"], r["status"]))
    values = [
        f"{r['organization']}/{r['key']}",
        *([] if narrow else [r["name"]]),
        r["kind"] or ("heartbeat" if r["type"] == "HEARTBEAT" else None),
        shown,
        ago(checked, now) if checked else "never",
        response,
        *(None if r[k] is None else f"{r[k]:.2f}%" for k in ("uptime_24h", "uptime_7d", "uptime_30d")),
        *([span(r["unknown_24h_s"]) if r["unknown_24h_s"] else None] if unknown else []),
        r["incident"] and f"#{r['incident']['id']} {r['incident']['title']}",
    ]
    return [c if isinstance(c, Text) else cell(c) for c in values]


def status_text(row: dict[str, Any]) -> Text:
    """The status, colored on a terminal; dim when it says nothing (never checked, or paused)."""
    from rich.text import Text

    never_checked = row["last_checked_at"] is None and row["status"] == OPERATIONAL  # the default of a new component
    style = "dim" if never_checked or row["paused"] else STATUS_STYLES.get(row["status"], "dim")
    return Text(row["status"] + (" (paused)" if row["paused"] else ""), style=style)


def until(when: datetime, now: datetime) -> str:
    """``in 5m`` for a time to come, ``5m ago`` for one past."""
    return ago(when, now) if when <= now else "in " + ago(now - (when - now), now).removesuffix(" ago")


def span(seconds: int) -> str:
    """``45s``, ``12m``, ``5h 2m``, ``3d 4h``: the two largest units."""
    counts = [(seconds // 86400, "d"), (seconds % 86400 // 3600, "h"), (seconds % 3600 // 60, "m"), (seconds % 60, "s")]
    first = next((i for i, (count, _) in enumerate(counts) if count), 3)
    return " ".join(f"{count}{unit}" for count, unit in counts[first : first + 2] if count) or "0s"


def ago(when: datetime, now: datetime) -> str:
    """``12s ago``, ``5m ago``, ``3h ago``, ``2d ago``."""
    seconds = max(0, int((now - when).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"
