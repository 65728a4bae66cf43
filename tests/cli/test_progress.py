"""Progress of long commands: drawn on stderr when it is a terminal, nothing otherwise."""

import contextlib
import io
import os
import subprocess
import sys
import threading

from rich.console import Console

from pulse import deadletters
from pulse.cli.progress import shown
from pulse.models import FailedMessage
from tests.support.env import ENV
from tests.support.worker import ROOT

APPLY = [sys.executable, "-m", "pulse.cli", "apply", "-f", str(ROOT / "tests" / "fixtures" / "acme.yaml")]


@contextlib.contextmanager
def pseudo_terminal():
    """Yields the descriptor of a new terminal and a list that holds, once the block is over,
    what was written to it."""
    master, slave = os.openpty()
    written: list[str] = []
    chunks: list[bytes] = []

    def read() -> None:
        with contextlib.suppress(OSError):  # EIO once the terminal side is closed
            while chunk := os.read(master, 4096):
                chunks.append(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        yield slave, written
    finally:
        os.close(slave)
        reader.join(10)
        os.close(master)
        written.append(b"".join(chunks).decode())


def test_it_draws_on_a_terminal_then_erases_the_bar():
    out = io.StringIO()
    with shown("applying", 3, console=Console(file=out, force_terminal=True, force_interactive=True)) as advance:
        for _ in range(3):
            advance(1)
    assert "applying" in out.getvalue() and "3/3" in out.getvalue()
    assert "\x1b[2K" in out.getvalue()  # transient: its line is erased at the end


def test_it_prints_nothing_when_the_console_is_not_a_terminal():
    out = io.StringIO()
    with shown("applying", 3, console=Console(file=out)) as advance:
        advance(3)
    assert out.getvalue() == ""


def test_it_draws_on_stderr_only_when_stderr_is_a_tty(monkeypatch, capsys):
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("FORCE_COLOR", "1")  # colors output, but must not animate a log file
    with shown("requeueing", 2) as advance:
        advance(2)
    assert capsys.readouterr() == ("", "")

    with pseudo_terminal() as (fd, written), open(os.dup(fd), "w") as tty, monkeypatch.context() as patch:
        patch.setattr(sys, "stderr", tty)
        with shown("requeueing", 2) as advance:
            advance(2)
    assert "requeueing" in written[0]


def test_requeue_advances_once_per_row(settings, stub_broker):
    rows = [
        FailedMessage.create(
            message_id=f"m{i}", queue_name="cleanup", actor_name="a", error_type="E", error_message="", traceback=""
        )
        for i in range(3)
    ]
    steps: list[int] = []
    assert deadletters.requeue(settings, stub_broker, rows, advance=steps.append) == 3
    assert deadletters.requeue(settings, stub_broker, rows, advance=steps.append) == 0  # already requeued
    assert steps == [1] * 6


def test_apply_shows_progress_on_a_terminal_and_prints_only_its_summary(database):
    env = {**ENV, "PATH": "/usr/bin:/bin", "TERM": "xterm"}
    with pseudo_terminal() as (fd, written):
        on_terminal = subprocess.run(APPLY, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=fd, text=True, timeout=60)
    assert on_terminal.returncode == 0
    assert on_terminal.stdout == (
        "applied 1 organization(s): 2 component(s) created, 0 updated, 0 channel(s), 0 subscriber(s)\n"
    )
    assert f"reading {APPLY[-1]}" in written[0] and "applying" in written[0] and "2/2" in written[0]

    piped = subprocess.run(APPLY, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert (piped.returncode, piped.stderr) == (0, "")
    assert piped.stdout.startswith("applied 1 organization(s): 0 component(s) created, 2 updated")


def test_a_file_name_is_shown_as_written_never_as_markup(database, tmp_path):
    path = tmp_path / "acme [bold]x [link=https:evil.example]y.yaml"  # no "/" in a file's name
    path.write_bytes((ROOT / "tests" / "fixtures" / "acme.yaml").read_bytes())
    env = {**ENV, "PATH": "/usr/bin:/bin", "TERM": "xterm", "COLUMNS": "300"}
    with pseudo_terminal() as (fd, written):
        on_terminal = subprocess.run(
            [*APPLY[:-1], path.name], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=fd, text=True, timeout=60
        )
    assert on_terminal.returncode == 0
    assert "reading acme [bold]x [link=https:evil.example]y.yaml" in written[0] and "\x1b]8;" not in written[0]
