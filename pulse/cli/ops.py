"""`pulse migrate`, `pulse queues`, `pulse health`: the database, RabbitMQ and the whole."""

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


@click.command()
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
        echo(f"note: {note}", err=True)


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
