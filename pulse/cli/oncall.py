"""`pulse oncall`: who is on call and when (`who`, `shifts`), the alerts with their timelines
(`alerts`), acknowledging and resolving them (`ack`, `resolve`), and the acknowledgement links'
endpoint (`ack-server`, the former name of `pulse serve`)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import click

from pulse.cli.output import LIMIT, echo, fail, print_json, print_table, settings

_TIME_HELP = "ISO 8601; without an offset, in the schedule's time zone."


@click.group()
def oncall() -> None:
    """On call: who is on call, the shifts of a range, alerts, acknowledging and resolving them."""


@oncall.command()
@click.argument("schedule", required=False)
@click.option("--at", "at_text", metavar="TIME", help=f"When (default: now). {_TIME_HELP}")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def who(schedule: str | None, at_text: str | None, as_json: bool) -> None:
    """Who is on call on each schedule (or SCHEDULE: KEY or ORG/KEY), since and until when, and
    who is next. Times are shown in each schedule's own zone."""
    from pulse.oncall import schedules

    settings()
    found = _schedules(schedule)
    rows = []
    for organization, row in found:
        at = _instant(at_text, row)
        rows.append(schedules.who(organization, row, at, schedules.names(row.organization_id)))
    if as_json:
        print_json(rows)
        return
    print_table(
        ["schedule", "on call", "since", "until", "next", "zone"],
        [
            [
                f"{r['organization']}/{r['schedule']}",
                _shown(r) + (" (override)" if r["source"].startswith("overrides") else ""),
                _local(r["since"], r["time_zone"]) or "(over 35 days)",
                _local(r["until"], r["time_zone"]) or "(over 35 days)",
                r["next"] and _shown(r["next"]),
                r["time_zone"],
            ]
            for r in rows
        ],
    )


@oncall.command()
@click.argument("schedule")
@click.option("--from", "start_text", metavar="TIME", help=f"From (default: now). {_TIME_HELP}")
@click.option("--to", "end_text", metavar="TIME", help=f"Until (default: 14 days after --from). {_TIME_HELP}")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def shifts(schedule: str, start_text: str | None, end_text: str | None, as_json: bool) -> None:
    """The shifts of SCHEDULE (KEY or ORG/KEY) from --from to --to, in the schedule's time zone:
    who, from when, until when, and from which layer or override."""
    from pulse.oncall import schedules

    settings()
    [(_, row)] = _schedules(schedule)
    start = _instant(start_text, row)
    end = _instant(end_text, row) if end_text else start + timedelta(days=14)
    if end <= start:
        fail("--to must be after --from", code=2)
    if end - start > timedelta(days=366):
        fail("--from and --to are more than a year apart: ask for a year at most", code=2)
    rows = schedules.timeline(row, start, end, schedules.names(row.organization_id))
    if as_json:
        print_json(rows)
        return
    print_table(
        ["from", "until", "on call", "source"],
        [[_local(r["from"], row.time_zone), _local(r["until"], row.time_zone), _shown(r), r["source"]] for r in rows],
    )


def _schedules(reference: str | None) -> list[Any]:
    from pulse.oncall import schedules

    try:
        return schedules.find(reference)
    except LookupError as e:
        fail(str(e.args[0]), code=2)


def _instant(text: str | None, row: Any) -> datetime:
    from pulse.oncall import schedules

    try:
        return schedules.instant(text, schedules.rotation.parse_time_zone(row.time_zone))
    except ValueError as e:
        fail(str(e), code=2)


def _shown(entry: dict[str, Any]) -> str:
    if entry["person"] is None:
        return "(no one)"
    return f"{entry['person_name']} ({entry['person']})"


def _local(text: str | None, zone: str) -> str | None:
    """An ISO instant as ``2026-12-07 09:00 EST`` in the zone ``zone``."""
    if text is None:
        return None
    from zoneinfo import ZoneInfo

    return datetime.fromisoformat(text).astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M %Z")


@oncall.command()
@click.option("--all", "everything", is_flag=True, help="Resolved alerts too.")
@click.option("--limit", type=LIMIT, default=50, show_default=True, help="How many, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def alerts(everything: bool, limit: int, as_json: bool) -> None:
    """On-call alerts not resolved (with --all, every one), newest first: status, level and round,
    when the next level is due, and the timeline: who was paged on which channel and how the
    delivery went, escalations, acknowledgements."""
    from pulse.oncall.queries import alerts as listed

    settings()
    rows = listed(everything=everything, limit=limit)
    if as_json:
        print_json(rows)
        return
    if not rows:
        echo("no alerts" if everything else "no open alerts (--all shows resolved ones)")
    for r in rows:
        state = r["status"]
        if r["status"] == "triggered":
            state += f", level {r['level']} of round {r['round']}, next level at {r['next_escalation_at'][11:19]} UTC"
        elif r["status"] == "acknowledged":
            state += f" by {r['acknowledged_by'] or 'an operator'} ({r['acknowledged_via']})"
        origin = r["component"] or (r["source"] and f"{r['source']}:{r['dedup_key']}")
        where = f"{r['organization']}/{origin or '-'}"
        echo(f"alert {r['id']}  {where}  {r['title']}  [{state}]  policy {r['policy']}")
        for s in r["timeline"]:
            where = f"L{s['level']}/R{s['round']} " if s["level"] else ""
            outcome = f" ({s['delivery']}{': ' + s['error'] if s.get('error') else ''})" if "delivery" in s else ""
            echo(f"  {s['at'][:19].replace('T', ' ')}  {s['kind']:<12} {where}{s['note']}{outcome}")


@oncall.command()
@click.argument("alert", type=int)
@click.option("--by", "person", metavar="PERSON", help="The person acknowledging (their key).")
def ack(alert: int, person: str | None) -> None:
    """Acknowledge ALERT: no one more is paged. Again, or after it is resolved, changes nothing."""
    from pulse.models import utcnow
    from pulse.oncall import alerts as alerts_

    settings()
    try:
        _, said = alerts_.acknowledge(alert, person, "cli", utcnow())
    except LookupError as e:
        fail(str(e.args[0]), code=2)
    echo(said)


@oncall.command()
@click.argument("alert", type=int)
def resolve(alert: int) -> None:
    """Resolve ALERT: no one more is paged (its incident stays as it is). Again changes nothing."""
    from pulse.models import utcnow
    from pulse.oncall import alerts as alerts_

    settings()
    try:
        _, said = alerts_.resolve(alert, "resolved by an operator (pulse oncall resolve)", utcnow())
    except LookupError as e:
        fail(str(e.args[0]), code=2)
    echo(said)


@oncall.command("ack-server")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True, help="Port to listen on.")
def ack_server(host: str, port: int) -> None:
    """Serve the acknowledgement links of pages: `pulse serve`, under its former name (it serves
    every inbound route). Point PULSE_ACK_URL at it (behind your TLS proxy); PULSE_ACK_SECRET signs
    the links."""
    from pulse.cli.serve import run

    if not settings().ack_secret:
        fail("set PULSE_ACK_SECRET (and PULSE_ACK_URL to this server's public address) first", code=2)
    run(host, port)


COMMANDS = [oncall]
