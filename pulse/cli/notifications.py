"""`pulse notify test` and `pulse notifications`: try a channel, list recent deliveries."""

from __future__ import annotations

import click

from pulse.cli.output import LIMIT, echo, fail, print_json, print_table, settings


@click.group()
def notify() -> None:
    """Notification channels."""


@notify.command("test")
@click.argument("channel")
def notify_test(channel: str) -> None:
    """Send a test message through CHANNEL (KEY or ORGANIZATION/KEY) and print the provider's answer."""
    from pulse.notifications.channels import TransportError
    from pulse.notifications.delivery import send_test
    from pulse.notifications.queries import find_channel

    current = settings()
    try:
        found = find_channel(channel)
    except LookupError as e:
        fail(str(e.args[0]), code=2)
    try:
        sent, elapsed_ms = send_test(found, current)
    except TransportError as e:
        fail(f"not sent: {e}")
    echo(
        f"sent through {found.type} channel {found.key} in {elapsed_ms:.0f} ms"
        + (f": {sent.reference}" if sent.reference else "")
    )


@click.command()
@click.option("--limit", type=LIMIT, default=50, show_default=True)
@click.option("--status", "status_filter", type=click.Choice(["pending", "sending", "sent", "failed", "cancelled"]))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def notifications(limit: int, status_filter: str | None, as_json: bool) -> None:
    """Recent deliveries, newest first: event, destination, status, attempts, error."""
    from pulse.notifications.queries import recent

    settings()
    rows = recent(limit, status_filter)
    if as_json:
        print_json(rows)
        return
    print_table(
        ["id", "created", "event", "destination", "status", "attempts", "error"],
        [
            [
                r["id"],
                r["created_at"][:19],
                r["event"],
                r["destination"],
                r["status"],
                r["attempts"],
                (r["last_error"] or "")[:80],
            ]
            for r in rows
        ],
    )


COMMANDS = [notify, notifications]
