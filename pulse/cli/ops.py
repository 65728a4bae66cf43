"""`pulse migrate`, `pulse queues [migrate]`, `pulse health`: the database, RabbitMQ and the whole."""

from __future__ import annotations

import sys

import click

from pulse.cli.output import echo, print_json, print_table, settings


@click.command()
def migrate() -> None:
    """Create the database if it is missing and apply pending migrations (safe to repeat)."""
    from pulse.db import migrate as run_migrations

    applied = run_migrations(settings())
    if applied:
        for name in applied:
            echo(f"applied {name}")
    else:
        echo("database is up to date")


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def queues(ctx: click.Context, as_json: bool) -> None:
    """Each queue's type; its ready, unacked, delayed and dead-letter counts; the messages the workers
    running here completed and the attempts they failed, since they started."""
    if ctx.invoked_subcommand is not None:
        return
    from pulse.rabbitmq import queue_counts, queue_names
    from pulse.runs import Processed, processed

    current = settings()
    rows, note = queue_counts(current, queue_names(current.queue_type))
    notes = [note] if note else []
    done = processed(current.metrics_dir)
    if done is None:
        notes.append("no worker runs on this host: completed and failed counts unknown")
    else:
        for row in rows:
            counted = done.get(row.queue, Processed(completed=0, failed=0))
            row.completed, row.failed = counted.completed, counted.failed
    if as_json:
        listed = [vars(r) for r in rows]
        print_json({"queue_type": current.queue_type, "queues": listed, "note": "; ".join(notes) or None})
        return
    print_table(
        ["queue", "type", "ready", "unacked", "completed", "failed", "delayed", "dead", "consumers"],
        [[r.queue, r.type, r.ready, r.unacked, r.completed, r.failed, r.delayed, r.dead, r.consumers] for r in rows],
    )
    mismatched = [r.queue for r in rows if r.type not in (None, current.queue_type)]
    if mismatched:
        echo(
            f"warning: PULSE_QUEUE_TYPE is {current.queue_type}, but {', '.join(mismatched)} "
            f"{'is' if len(mismatched) == 1 else 'are'} not: workers refuse to start until `pulse queues migrate`",
            err=True,
        )
    for line in notes:
        echo(f"note: {line}", err=True)


@queues.command("migrate")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def queues_migrate(yes: bool) -> None:
    """Give every queue the type of PULSE_QUEUE_TYPE, keeping its messages (workers and scheduler stopped)."""
    from pulse.queues import migrate as migrate_queues

    current = settings()
    if not yes:
        click.confirm(
            f"Move every queue that is not {current.queue_type} to a {current.queue_type} queue, with its messages? "
            "Every worker and the scheduler must be stopped",
            abort=True,
        )
    moved = migrate_queues(current, progress=lambda name, count: echo(f"{name}: migrated, {count} message(s) moved"))
    echo(f"every queue is {current.queue_type}: {len(moved)} migrated, {sum(moved.values())} message(s) moved")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def health(as_json: bool) -> None:
    """Exit 0 when the broker, the database and the scheduler heartbeat are fine, 1 otherwise."""
    from pulse.health import probe_all

    probes = probe_all(settings())
    healthy = all(p.ok for p in probes)
    if as_json:
        print_json({"healthy": healthy, "checks": [vars(p) for p in probes]})
    else:
        for p in probes:
            echo(f"{p.name:<10} {'ok  ' if p.ok else 'FAIL'} {p.detail}")
    sys.exit(0 if healthy else 1)


COMMANDS = [migrate, queues, health]
