"""Real worker processes (`dramatiq pulse.actors ...`) for integration tests."""

from __future__ import annotations

import functools
import os
import random
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import requests
from prometheus_client.parser import text_string_to_metric_families

from pulse.processes import DRAMATIQ
from tests.support.env import ENV

if TYPE_CHECKING:
    from tests.support.hosts import Host

ROOT = Path(__file__).resolve().parents[2]
READY = "Worker process is ready for action"


# The tests' own servers listen on ports below the kernel's ephemeral range (32768-60999 unless
# net.ipv4.ip_local_port_range says otherwise), where no outgoing connection takes one: a port found
# free stays free until its server binds it, even with other test runs (tox -p) opening thousands of
# connections beside. Picked at random, so two runs at once rarely try the same one.
PORTS = range(12000, 25000)


def free_port() -> int:
    """A port of PORTS that nothing has bound on any address (nor listens on)."""
    for _ in range(200):
        port = random.randrange(PORTS.start, PORTS.stop)
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do: TIME_WAIT is no obstacle
            try:
                s.bind(("", port))
            except OSError:
                continue
        return port
    raise AssertionError(f"no free port in {PORTS.start}-{PORTS.stop - 1}")


class WorkerProcess:
    """``dramatiq pulse.actors tests.support.actors`` (or other ``modules``) in its own process group, its output kept
    (across the restarts of its worker processes: the main process keeps its PID)."""

    def __init__(
        self,
        *args: str,
        processes: int = 1,
        threads: int = 4,
        env: dict[str, str] | None = None,
        host: Host | None = None,
        modules: tuple[str, ...] = ("pulse.actors", "tests.support.actors"),
    ) -> None:
        command = [
            *DRAMATIQ,  # as compose runs it: a recycling re-executes it
            *modules,
            "--path",
            str(ROOT),
            "--processes",
            str(processes),
            "--threads",
            str(threads),
            *args,
        ]
        self._start(command, env, ready=READY, expected=processes, host=host)

    def _start(
        self, command: list[str], env: dict[str, str] | None, *, ready: str, expected: int, host: Host | None = None
    ) -> None:
        """Start ``command`` in a session of its own: here, or inside ``host`` (`tests.support.hosts`)."""
        self.marker, self.expected_ready = ready, expected
        self.lines: list[str] = []
        self.ready = threading.Event()
        popen = host.popen if host is not None else functools.partial(subprocess.Popen, start_new_session=True)
        self.process = popen(
            command,
            cwd=ROOT,
            env={**os.environ, **ENV, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout
        for line in self.process.stdout:
            self.lines.append(line)
            if sum(self.marker in seen for seen in self.lines) >= self.expected_ready:
                self.ready.set()
        self.ready.set()  # the process ended: let waiters look at why

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_ready(self, timeout: float = 60) -> WorkerProcess:
        if not self.ready.wait(timeout) or self.process.poll() is not None:
            raise AssertionError(f"worker did not start:\n{self.output}")
        return self

    def exited(self, timeout: float) -> int:
        """Its exit code, once it exits by itself within ``timeout`` seconds; else AssertionError
        with what it wrote (its processes, still running, are left for the fixture to stop)."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"worker did not exit within {timeout:g} s:\n{self.output}") from None

    def kill(self) -> None:
        """SIGKILL every process of the group, as a crash would."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def stop(self, timeout: float = 30) -> int:
        self.terminate()
        if self.process.returncode is None:
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode

    def terminate(self) -> None:
        """Ask it to stop (SIGTERM), not waiting: `stop` waits."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # the main process passes it on, once


class SchedulerProcess(WorkerProcess):
    """``periodiq pulse.actors [module ...]`` in its own process group; ready once it sent its first
    ticks. ``modules`` declare more ticks (`tests.support.utc_tick`)."""

    def __init__(self, env: dict[str, str] | None = None, modules: tuple[str, ...] = ()) -> None:
        command = [sys.executable, "-c", "from periodiq import entrypoint; entrypoint()", "pulse.actors", *modules]
        self._start(command, env, ready="Scheduling ", expected=1)


def metric(port: int, name: str, **labels: str) -> float | None:
    """The value of one sample from a worker's /metrics, or None (no such sample, or the endpoint
    not serving yet: its process starts beside the worker's, so a test may ask before it listens)."""
    try:
        text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    except requests.ConnectionError:
        return None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return None
