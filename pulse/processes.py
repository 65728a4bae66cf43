"""Pulse's two long-running commands, ``dramatiq pulse.actors`` (workers) and ``periodiq
pulse.actors`` (scheduler), and a supervisor that runs both in the foreground and stops them
together: `pulse run` and `pulse demo` use it; production runs them as separate services (see
docker/compose.yml)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Mapping

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
