"""`pulse dlq`: dead letters, the messages that finally failed: list, show, requeue, purge."""

from __future__ import annotations

import json
from typing import Any

import click

from pulse.cli.output import LIMIT, echo, fail, print_json, print_table, settings


@click.group()
def dlq() -> None:
    """Dead letters: messages that finally failed."""


def dead_row(row: Any, full: bool = False) -> dict[str, Any]:
    data = {
        "id": row.id,
        "message_id": row.message_id,
        "queue": row.queue_name,
        "actor": row.actor_name,
        "attempts": row.attempts,
        "error_type": row.error_type,
        "error": row.error_message,
        "failed_at": row.failed_at.isoformat(),
        "requeue_count": row.requeue_count,
    }
    if full:
        data.update(
            args=row.args,
            kwargs=row.kwargs,
            options=row.options,
            requeued_at=row.requeued_at and row.requeued_at.isoformat(),
            traceback=row.traceback,
        )
    return data


def find_dead(message: str) -> Any:
    from pulse import deadletters

    try:
        return deadletters.find(message)
    except LookupError as e:
        fail(str(e.args[0]))


queue_option = click.option("--queue", "-q", help="Only this queue.")


@dlq.command("list")
@queue_option
@click.option("--limit", type=LIMIT, default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def dlq_list(queue: str | None, limit: int, as_json: bool) -> None:
    """Dead messages not requeued since they last failed, newest first."""
    from pulse import deadletters

    settings()
    rows = deadletters.pending(queue, limit)
    if as_json:
        print_json([dead_row(r) for r in rows])
        return
    print_table(
        ["id", "failed at", "queue", "actor", "attempts", "error"],
        [
            [
                r.id,
                r.failed_at.strftime("%Y-%m-%d %H:%M:%S"),
                r.queue_name,
                r.actor_name,
                r.attempts,
                f"{r.error_type}: {r.error_message}"[:80],
            ]
            for r in rows
        ],
    )


@dlq.command("show")
@click.argument("message")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def dlq_show(message: str, as_json: bool) -> None:
    """One dead message, whole: MESSAGE is its id in `dlq list` or its message id."""
    settings()
    data = dead_row(find_dead(message), full=True)
    if as_json:
        print_json(data)
        return
    trace = data.pop("traceback")
    for key, value in data.items():
        echo(f"{key:>14}: {json.dumps(value, default=str) if isinstance(value, dict | list) else value}")
    echo(f"\n{trace}")


@dlq.command("requeue")
@click.argument("messages", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Every dead message (of --queue, if given).")
@queue_option
def dlq_requeue(messages: tuple[str, ...], everything: bool, queue: str | None) -> None:
    """Send dead messages back to their queue for a fresh set of attempts."""
    from pulse import deadletters
    from pulse.app.workers import setup_broker
    from pulse.cli.progress import shown

    current = settings()
    if bool(messages) == everything:
        fail("name the messages to requeue, or give --all", code=2)
    rows = deadletters.pending(queue) if everything else [find_dead(m) for m in messages]
    for row in rows:
        if row.requeued_at is not None:
            echo(f"pulse: message {row.id} was already requeued at {row.requeued_at:%Y-%m-%d %H:%M:%S}", err=True)
    broker = setup_broker(current)
    with shown("requeueing", len(rows)) as advance:
        count = deadletters.requeue(current, broker, rows, advance=advance)
    echo(f"requeued {count} message(s)")


@dlq.command("purge")
@queue_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def dlq_purge(queue: str | None, yes: bool) -> None:
    """Forget dead messages for good: their records and the .XQ queues."""
    from pulse import deadletters
    from pulse.rabbitmq import queue_names

    current = settings()
    targets = [queue] if queue else list(queue_names(current.queue_type))
    if not yes:
        click.confirm(f"Delete every dead message of {', '.join(targets)}?", abort=True)
    rows, dropped = deadletters.purge(current, targets)
    echo(f"deleted {rows} record(s), dropped {dropped} message(s) from the dead-letter queues")


COMMANDS = [dlq]
