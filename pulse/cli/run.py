"""`pulse run` and `pulse demo`: workers and scheduler together in the foreground, for a laptop
or a demo.

Production runs them as separate services (see docker/compose.yml); these start the same two
commands, ``dramatiq pulse.actors`` and ``periodiq pulse.actors``, and stop both together
(`pulse.processes`).
"""

from __future__ import annotations

import sys

import click

from pulse.cli.output import echo, settings
from pulse.processes import supervise


@click.command("run")
@click.option("--processes", "-p", type=click.IntRange(1), default=1, show_default=True, help="Worker processes.")
@click.option("--threads", "-t", type=click.IntRange(1), default=8, show_default=True, help="Threads per process.")
def run_command(processes: int, threads: int) -> None:
    """Migrate, then run workers and scheduler together until Ctrl-C."""
    from pulse.db import migrate as run_migrations

    for name in run_migrations(settings()):
        echo(f"applied {name}")
    sys.exit(supervise(processes, threads))


@click.command()
@click.option(
    "--threads", "-t", type=click.IntRange(1), default=8, show_default=True, help="Threads per worker process."
)
def demo(threads: int) -> None:
    """Run Pulse against a bundled demo target whose API flaps, printing checks, incidents and
    notifications as they happen, until Ctrl-C."""
    from pulse.demo import run_demo

    sys.exit(run_demo(settings(), threads))


COMMANDS = [run_command, demo]
