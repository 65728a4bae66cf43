"""`pulse run` and `pulse demo`: workers and scheduler together in the foreground, for a laptop
or a demo.

Production runs them as separate services (see docker/compose.yml); this starts the same two
commands, ``dramatiq pulse.actors`` and ``periodiq pulse.actors``, and stops both together.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Mapping

import click

from pulse.cli.output import echo, settings

SCHEDULER = [sys.executable, "-c", "from periodiq import entrypoint; entrypoint()", "pulse.actors"]


def _dramatiq() -> list[str]:
    """The `dramatiq` command installed beside Pulse. A recycling restarts the worker processes by
    having dramatiq re-execute its command line, and ``python -m dramatiq`` comes back as whichever
    ``python`` is first on PATH, maybe one without Pulse: the command is used when it is there."""
    script = os.path.join(sysconfig.get_path("scripts"), "dramatiq")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "dramatiq"]


DRAMATIQ = _dramatiq()


def workers(processes: int, threads: int) -> list[str]:
    return [*DRAMATIQ, "pulse.actors", "--processes", str(processes), "--threads", str(threads)]


def supervise(
    processes: int,
    threads: int,
    shutdown_timeout: float = 60,
    env: Mapping[str, str] | None = None,
    watch: Callable[[], None] | None = None,
) -> int:
    """Run until Ctrl-C (or SIGTERM), or until one of the two exits; return an exit code.
    ``watch`` is called every 0.2 s meanwhile (the demo's feed)."""
    # Own sessions: a Ctrl-C reaches only this process, which passes on exactly one SIGTERM.
    children = [
        subprocess.Popen(command, start_new_session=True, env=env)
        for command in (workers(processes, threads), SCHEDULER)
    ]
    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    while not stopping and all(child.poll() is None for child in children):
        if watch is not None:
            watch()
        time.sleep(0.2)
    code = 0 if stopping else next((child.returncode for child in children if child.returncode), 1)
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + shutdown_timeout
    for child in children:
        try:
            child.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return code


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
