"""`pulse`: the operator's command line."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
import peewee
import pika.exceptions
import psycopg
from rich.console import Console
from rich.table import Table

from pulse.config import Settings, get_settings, redact
from pulse.errors import ConfigError

console = Console()


class PulseGroup(click.Group):
    """Turns the failures an operator can meet into one line and an exit code, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConfigError as e:
            fail(str(e), code=2)
        except (peewee.OperationalError, peewee.InterfaceError, psycopg.OperationalError) as e:
            fail(f"database unavailable at {redact(get_settings().database_url)}: {first_line(e)}")
        except pika.exceptions.AMQPError as e:
            fail(f"RabbitMQ unavailable at {redact(get_settings().broker_url)}: {first_line(e) or type(e).__name__}")


def fail(text: str, code: int = 1) -> None:
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


@click.group(cls=PulseGroup)
@click.version_option(package_name="pulse-workers")
def main() -> None:
    """Operate Pulse: database, queues, dead letters, health."""


@main.command()
def migrate() -> None:
    """Create the database if it is missing and apply pending migrations (safe to repeat)."""
    from pulse.db import migrate as run_migrations

    applied = run_migrations(settings())
    if applied:
        for name in applied:
            click.echo(f"applied {name}")
    else:
        click.echo("database is up to date")


@main.command()
@click.option("--processes", "-p", type=click.IntRange(1), default=1, show_default=True, help="Worker processes.")
@click.option("--threads", "-t", type=click.IntRange(1), default=8, show_default=True, help="Threads per process.")
def run(processes: int, threads: int) -> None:
    """Migrate, then run workers and scheduler together until Ctrl-C."""
    from pulse.db import migrate as run_migrations
    from pulse.run import run as run_all

    for name in run_migrations(settings()):
        click.echo(f"applied {name}")
    sys.exit(run_all(processes, threads))


@main.command()
@click.option(
    "--threads", "-t", type=click.IntRange(1), default=8, show_default=True, help="Threads per worker process."
)
def demo(threads: int) -> None:
    """Run Pulse against a bundled demo target whose API flaps, printing checks, incidents and
    notifications as they happen, until Ctrl-C."""
    from pulse.demo import run_demo

    sys.exit(run_demo(settings(), threads))


@main.command("apply")
@click.option("-f", "--file", "path", type=click.File("r", encoding="utf-8"), required=True, help="YAML file.")
@click.option("--prune", is_flag=True, help="Also delete what the file does not name.")
def apply_file(path: Any, prune: bool) -> None:
    """Declare organizations, components, channels and subscribers from a file: all of it, or nothing."""
    from pulse import configfile
    from pulse.progress import shown

    try:
        with shown(f"reading {path.name}"):
            config = configfile.load(path.read())
    except ConfigError as e:
        click.echo(f"pulse: {path.name} is not valid, nothing was changed:", err=True)
        for line in str(e).splitlines():
            click.echo(f"  {line}", err=True)
        sys.exit(2)
    settings()
    with shown("applying", configfile.steps(config)) as advance:
        report = configfile.apply(config, prune=prune, advance=advance)
    click.echo(
        f"applied {report.organizations} organization(s): {report.components_created} component(s) created, "
        f"{report.components_updated} updated, {report.channels} channel(s), {report.subscribers} subscriber(s)"
        + (
            f"; pruned {report.organizations_deleted} organization(s), {report.components_deleted} component(s), "
            f"{report.channels_deleted} channel(s), {report.subscribers_deleted} subscriber(s)"
            if prune
            else ""
        )
    )


@main.command()
@click.argument("organization", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(organization: str | None, as_json: bool) -> None:
    """Each component (of ORGANIZATION, a slug, if given): status, last check, last response time,
    uptime over 24 hours, 7 and 30 days (the share of checks that passed, slow ones included) and
    open incident."""
    from pulse import status_table
    from pulse.models import Organization, utcnow
    from pulse.uptime import overview

    settings()
    if organization and not Organization.select().where(Organization.slug == organization).exists():
        fail(f"no organization {organization!r}", code=2)
    rows = overview(organization)
    if as_json:
        print_json(rows)
        return
    now = utcnow()
    table = status_table.table(rows, now, narrow=False)
    if console.is_terminal and natural_width(table) > console.width:
        table = status_table.table(rows, now, narrow=True)
    print_whole(table)


def print_whole(table: Table) -> None:
    """Fit the table to the terminal; elsewhere (a pipe, a file), print each row on one line."""
    if console.is_terminal:
        console.print(table)
        return
    Console(width=natural_width(table)).print(table)


def natural_width(table: Table) -> int:
    """The width the table takes when nothing is cut."""
    return console.measure(table, options=console.options.update_width(100_000)).maximum


@main.group()
def notify() -> None:
    """Notification channels."""


@notify.command("test")
@click.argument("channel")
def notify_test(channel: str) -> None:
    """Send a test message through CHANNEL (KEY or ORGANIZATION/KEY) and print the provider's answer."""
    from pulse import notify as notifications
    from pulse.channels import TransportError

    current = settings()
    try:
        found = notifications.find_channel(channel)
    except LookupError as e:
        fail(str(e.args[0]), code=2)
    try:
        sent, elapsed_ms = notifications.send_test(found, current)
    except TransportError as e:
        fail(f"not sent: {e}")
    click.echo(
        f"sent through {found.type} channel {found.key} in {elapsed_ms:.0f} ms"
        + (f": {sent.reference}" if sent.reference else "")
    )


@main.command()
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True)
@click.option("--status", "status_filter", type=click.Choice(["pending", "sending", "sent", "failed"]))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def notifications(limit: int, status_filter: str | None, as_json: bool) -> None:
    """Recent deliveries, newest first: event, destination, status, attempts, error."""
    from pulse.notify import recent

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


@main.command("check")
@click.argument("key", required=False)
@click.option("--url", help="Check this URL instead of a configured component.")
@click.option("--condition", "-c", "condition_texts", multiple=True, help="A condition (repeat for more).")
@click.option("--method", default="GET", show_default=True)
@click.option("--header", "-H", "headers", multiple=True, help="Name: value (repeat for more).")
@click.option("--timeout", type=click.FloatRange(0.1, 60), default=10, show_default=True, help="Seconds.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def check_now(
    key: str | None,
    url: str | None,
    condition_texts: tuple[str, ...],
    method: str,
    headers: tuple[str, ...],
    timeout: float,
    as_json: bool,
) -> None:
    """Run one check now and print each condition's result (nothing is recorded).

    KEY names a configured component (ORGANIZATION/KEY when keys repeat); --url with --condition
    tries conditions on any target, without a database. Exit 0 when every condition passes, 1
    when any fails, 2 on a usage or configuration error.
    """
    from pulse import conditions, uptime
    from pulse.http import AddressPolicy, Target
    from pulse.models import utcnow

    if bool(key) == bool(url):
        fail("give a component KEY or --url, not both", code=2)
    current = get_settings()
    try:
        if url:
            extra = dict(_header(h) for h in headers)
            texts = list(condition_texts) or list(uptime.DEFAULT_CONDITIONS)
            check = Target(method=method.upper(), url=url, headers=extra, timeout_s=timeout)
            extract: dict[str, str] = {}
        else:
            settings()
            component = uptime.load(uptime.find(str(key)).id, utcnow())
            if component is None:
                raise LookupError(f"component {key!r} was deleted just now")
            check, texts, extract = component.target, component.conditions, component.extract
        for text in texts:
            uptime.parse(text)
    except conditions.ConditionError as e:
        fail(str(e), code=2)
    except LookupError as e:
        fail(str(e.args[0]), code=2)
    outcome = uptime.run(check, texts, extract, AddressPolicy.from_settings(current))
    report = {
        "success": outcome.success,
        "status": outcome.response.status,
        "response_time_ms": round(outcome.response.response_time_ms),
        "error": outcome.error,
        "observed": outcome.seen,
        "conditions": [r.as_dict() for r in outcome.results],
        "extracted": outcome.extracted,
    }
    if as_json:
        print_json(report)
    else:
        if outcome.error:
            click.echo(f"error: {outcome.error}")
        for r in outcome.results:
            click.echo(f"{'PASS' if r.success else 'FAIL'}  {r.resolved}")
        click.echo(f"{outcome.seen} in {report['response_time_ms']} ms")
    sys.exit(0 if outcome.success else 1)


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        fail(f"--header {text!r}: expected 'Name: value'", code=2)
    return name.strip(), value.strip()


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def queues(as_json: bool) -> None:
    """Ready, unacked, delayed and dead-letter counts per queue."""
    from pulse.rabbitmq import QUEUES, queue_counts

    rows, note = queue_counts(settings(), QUEUES)
    if as_json:
        print_json({"queues": [vars(r) for r in rows], "note": note})
        return
    print_table(
        ["queue", "ready", "unacked", "delayed", "dead", "consumers"],
        [[r.queue, r.ready, r.unacked, r.delayed, r.dead, r.consumers] for r in rows],
    )
    if note:
        click.echo(f"note: {note}", err=True)


@main.group()
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


queue_option = click.option("--queue", "-q", help="Only this queue.")


@dlq.command("list")
@queue_option
@click.option("--limit", type=click.IntRange(1), default=100, show_default=True)
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


def find_dead(message: str) -> Any:
    from pulse.models import FailedMessage

    query = FailedMessage.message_id == message
    if message.isdigit():
        query |= FailedMessage.id == int(message)
    row = FailedMessage.get_or_none(query)
    if row is None:
        fail(f"no dead message {message!r} (see `pulse dlq list`)")
    return row


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
        click.echo(f"{key:>14}: {json.dumps(value, default=str) if isinstance(value, dict | list) else value}")
    click.echo(f"\n{trace}")


@dlq.command("requeue")
@click.argument("messages", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Every dead message (of --queue, if given).")
@queue_option
def dlq_requeue(messages: tuple[str, ...], everything: bool, queue: str | None) -> None:
    """Send dead messages back to their queue for a fresh set of attempts."""
    from pulse import deadletters
    from pulse.broker import setup_broker
    from pulse.progress import shown

    current = settings()
    if bool(messages) == everything:
        fail("name the messages to requeue, or give --all", code=2)
    rows = deadletters.pending(queue) if everything else [find_dead(m) for m in messages]
    for row in rows:
        if row.requeued_at is not None:
            click.echo(f"pulse: message {row.id} was already requeued at {row.requeued_at:%Y-%m-%d %H:%M:%S}", err=True)
    broker = setup_broker(current)
    with shown("requeueing", len(rows)) as advance:
        count = deadletters.requeue(current, broker, rows, advance=advance)
    click.echo(f"requeued {count} message(s)")


@dlq.command("purge")
@queue_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def dlq_purge(queue: str | None, yes: bool) -> None:
    """Forget dead messages for good: their records and the .XQ queues."""
    from pulse import deadletters
    from pulse.rabbitmq import QUEUES

    current = settings()
    targets = [queue] if queue else list(QUEUES)
    if not yes:
        click.confirm(f"Delete every dead message of {', '.join(targets)}?", abort=True)
    rows, dropped = deadletters.purge(current, targets)
    click.echo(f"deleted {rows} record(s), dropped {dropped} message(s) from the dead-letter queues")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def health(as_json: bool) -> None:
    """Exit 0 when the broker, the database and the scheduler heartbeat are fine, 1 otherwise."""
    from pulse.health import run_checks

    checks = run_checks(settings())
    healthy = all(c.ok for c in checks)
    if as_json:
        print_json({"healthy": healthy, "checks": [vars(c) for c in checks]})
    else:
        for c in checks:
            click.echo(f"{c.name:<10} {'ok  ' if c.ok else 'FAIL'} {c.detail}")
    sys.exit(0 if healthy else 1)


if __name__ == "__main__":
    main()
