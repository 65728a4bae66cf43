"""`pulse migrate`, `pulse queues [migrate]`, `pulse health`: the database, RabbitMQ and the whole."""

from __future__ import annotations

import sys

import click

from pulse.cli.output import echo, fail, print_json, print_table, settings

YES_NO: dict[bool | None, str | None] = {True: "yes", False: "no", None: None}


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
    running here completed and the attempts they failed, since they started; whether it is paused."""
    if ctx.invoked_subcommand is not None:
        return
    import peewee

    from pulse import pause
    from pulse.rabbitmq import queue_names
    from pulse.rabbitmq.admin import queue_counts
    from pulse.runs import Processed, processed

    current = settings()
    rows, note = queue_counts(current, queue_names(current.queue_type))
    notes = [note] if note else []
    try:
        paused: frozenset[str] | None = pause.read()
    except peewee.DatabaseError as e:
        paused = None
        notes.append(f"database unavailable ({type(e).__name__}): paused queues unknown")
    for row in rows:
        row.paused = None if paused is None else row.queue in paused
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
        ["queue", "type", "ready", "unacked", "completed", "failed", "delayed", "dead", "consumers", "paused"],
        [
            [
                r.queue,
                r.type,
                r.ready,
                r.unacked,
                r.completed,
                r.failed,
                r.delayed,
                r.dead,
                r.consumers,
                YES_NO[r.paused],
            ]
            for r in rows
        ],
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
    from pulse.rabbitmq.queues import migrate as migrate_queues

    current = settings()
    if not yes:
        click.confirm(
            f"Move every queue that is not {current.queue_type} to a {current.queue_type} queue, with its messages? "
            "Every worker and the scheduler must be stopped",
            abort=True,
        )
    moved = migrate_queues(current, progress=lambda name, count: echo(f"{name}: migrated, {count} message(s) moved"))
    echo(f"every queue is {current.queue_type}: {len(moved)} migrated, {sum(moved.values())} message(s) moved")


@queues.command("pause")
@click.argument("queue")
def queues_pause(queue: str) -> None:
    """Stop every worker taking messages from QUEUE (those in flight finish), until `pulse queues resume`."""
    from pulse import pause

    settings()
    try:
        changed = pause.pause(queue)
    except ValueError as e:
        fail(str(e), 2)
    echo(f"{queue}: {'paused' if changed else 'was paused already'}; workers stop taking its messages within 2 s")


@queues.command("resume")
@click.argument("queue")
def queues_resume(queue: str) -> None:
    """Let the workers take messages from QUEUE again."""
    from pulse import pause

    settings()
    try:
        changed = pause.resume(queue)
    except ValueError as e:
        fail(str(e), 2)
    echo(f"{queue}: {'resumed' if changed else 'was not paused'}; workers take its messages again within 2 s")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--worker", is_flag=True, help="Fail when no worker process runs here (a worker's container).")
def health(as_json: bool, worker: bool) -> None:
    """Exit 0 when the broker, the database, the scheduler heartbeat and the worker processes
    running here are fine, 1 otherwise."""
    from pulse.health import probe_all

    probes = probe_all(settings(), worker=worker)
    healthy = all(p.ok for p in probes)
    if as_json:
        print_json({"healthy": healthy, "checks": [vars(p) for p in probes]})
    else:
        for p in probes:
            echo(f"{p.name:<10} {'ok  ' if p.ok else 'FAIL'} {p.detail}")
    sys.exit(0 if healthy else 1)


COMMANDS = [migrate, queues, health]
