"""A server binary the tests start (Prometheus, Alertmanager): its output kept in a log file so
a failure can show the end of it, and checks of its generated configuration by the tool that
ships with it (``promtool``, ``amtool``).

Without the binary a test skips, naming the Debian package to install; with PULSE_REQUIRE_TOOLS=1
(CI) it fails instead, as tests/test_docker.py does: see `require`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self

import pytest
import requests

from tests.support.wait import wait_for

#: The Debian package of each binary the tests run.
PACKAGES = {
    "prometheus": "prometheus",
    "promtool": "prometheus",
    "prometheus-alertmanager": "prometheus-alertmanager",
    "amtool": "prometheus-alertmanager",
}
TAIL = 40  # lines of a daemon's log shown in a failure


def require(*binaries: str) -> None:
    """Skip the calling test unless every binary is on PATH, naming its Debian package; with
    PULSE_REQUIRE_TOOLS=1 fail instead."""
    for binary in binaries:
        if shutil.which(binary) is None:
            reason = f"{binary} not found: install the Debian package {PACKAGES.get(binary, binary)}"
            if os.environ.get("PULSE_REQUIRE_TOOLS") == "1":
                pytest.fail(reason + "; PULSE_REQUIRE_TOOLS=1 requires it")
            pytest.skip(reason)


def check(tool: str, *args: str) -> None:
    """Run a checker (``promtool check config FILE``) if it is installed; raise with its output if
    it refuses. A missing checker checks nothing: the daemon itself still refuses a bad file."""
    binary = shutil.which(tool)
    if binary is None:
        return
    done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{tool} {' '.join(args)} refused it (exit {done.returncode}):\n{done.stdout}{done.stderr}")


class Daemon:
    """``binary args...`` started at once, its stdout and stderr in ``log``; `stop` ends it."""

    def __init__(self, name: str, args: list[str], log: Path) -> None:
        binary = shutil.which(name)
        if binary is None:
            raise RuntimeError(f"{name} not found: install the Debian package {PACKAGES.get(name, name)}")
        self.name = name
        self.log = log
        with log.open("wb") as out:
            self.process = subprocess.Popen([binary, *args], stdout=out, stderr=subprocess.STDOUT)

    def tail(self, lines: int = TAIL) -> str:
        """The last ``lines`` lines of its output."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError as error:
            return f"(no log: {error})"
        return "\n".join(text.splitlines()[-lines:])

    def report(self, message: str) -> str:
        """``message``, how the process is (running, or its exit status) and the tail of its log."""
        code = self.process.poll()
        state = "still running" if code is None else f"exited with status {code}"
        return f"{message}\n{self.name} ({state}), last lines of its log:\n{self.tail()}"

    def wait_ready(self, probe: Callable[[], object], what: str, timeout: float = 60) -> None:
        """Wait until ``probe()`` is truthy; fail at once if the process exits, or after ``timeout``,
        with its log."""

        def ready() -> object:
            if self.process.poll() is not None:
                raise RuntimeError(self.report(f"{self.name} exited while waiting for {what}"))
            return probe()

        try:
            wait_for(ready, what, timeout=timeout)
        except AssertionError as error:
            raise RuntimeError(self.report(str(error))) from None

    def answers(self, url: str) -> bool:
        """Whether ``GET url`` answers 200 (``/-/ready``)."""
        try:
            return requests.get(url, timeout=5).status_code == 200
        except requests.RequestException:
            return False

    def died(self) -> str | None:
        """If the process has exited (call it before `stop`), a report saying so; else None."""
        if self.process.poll() is None:
            return None
        return self.report(f"{self.name} exited on its own before the end of the test")

    def stop(self) -> None:
        """Terminate it (SIGTERM: both shut down cleanly), killing it if it takes over 10 s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Harness:
    """What a daemon's harness is as a context manager: on a failure inside it, the daemon's log
    tail is added to the error; on leaving, `close`, and a daemon that had exited on its own is an
    error of its own. A harness sets ``name``, ``url``, ``daemon`` and ``directory`` (its files)."""

    name: str
    url: str
    daemon: Daemon | None
    directory: Path

    def tail(self) -> str:
        """The last lines of its log."""
        return self.daemon.tail() if self.daemon else "(not started)"

    def close(self) -> str | None:
        """Stop the daemon and remove its directory; a report if it had exited on its own, else None."""
        died = None
        if self.daemon is not None:
            died = self.daemon.died()
            self.daemon.stop()
        shutil.rmtree(self.directory, ignore_errors=True)
        return died

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if error is not None and self.daemon is not None:
            error.add_note(self.daemon.report(f"While the test ran with {self.name} at {self.url}"))
        died = self.close()
        if died and error is None:
            raise RuntimeError(died)
