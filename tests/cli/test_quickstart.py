"""The README's quick start, run as a newcomer would, on a machine with one Python: in a fresh copy
of the project, its first command installs Pulse in a new virtualenv and runs the demo; within
about a minute the demo's API goes down, an incident opens and its notification arrives; Ctrl-C
stops everything, and the user's own database and vhost hold nothing of the demo. Then its test
command skips the Pythons that are not there instead of failing."""

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading

import pytest

from pulse.db import db, setup_database
from pulse.demo import own
from pulse.models import Component, Incident, Notification
from pulse.rabbitmq import admin
from tests.support.wait import wait_for
from tests.support.worker import ROOT, free_port

NOT_COPIED = shutil.ignore_patterns(".git", ".venv", ".ci-venv", ".tox", "__pycache__", "*.egg-info", ".*_cache")
INSTALL_AND_RUN_S = 300  # a fresh virtualenv and `pip install`, then the demo's first outage


def quick_start_command() -> str:
    """The command under "Run Pulse" in README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [line.strip() for line in text.splitlines() if line.startswith("    ") and "pulse demo" in line]
    assert len(commands) == 1, f"README.md should show one quick-start command running `pulse demo`: {commands}"
    return commands[0]


@pytest.mark.minutes
def test_the_quick_start_shows_an_incident_and_its_notification_and_stops_on_ctrl_c(
    settings, database, rabbit, tmp_path
):
    project = tmp_path / "pulse"
    shutil.copytree(ROOT, project, ignore=NOT_COPIED)
    one_python = f"{sys.base_prefix}/bin:/usr/bin:/bin"  # Python 3.11 only, as on a fresh machine
    env = {**os.environ, "PATH": one_python, "PULSE_METRICS_PORT": str(free_port())}
    env.pop("PULSE_LOG_LEVEL")  # the demo's own default (warnings only) is part of what is tested
    demo = subprocess.Popen(
        ["bash", "-c", quick_start_command()],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in demo.stdout], daemon=True).start()
    seen: list[str] = []

    def shown(pattern: str) -> bool:
        while not lines.empty():
            seen.append(lines.get())
        return any(re.search(pattern, line) for line in seen)

    try:
        wait_for(
            lambda: shown(r"incident +api +#\d+ opened: Public API is down"), "the incident", INSTALL_AND_RUN_S, 0.2
        )
        wait_for(lambda: shown(r"webhook +incident\.opened: .*\(signature ok\)"), "the notification", 30, 0.2)
    finally:
        os.killpg(demo.pid, signal.SIGINT)  # Ctrl-C
        code = demo.wait(90)
        shown("")
    output = "".join(seen)
    assert code == 0, output
    assert "demo stopped" in output
    assert re.search(r"check +api +503 in \d+ ms +FAIL \[STATUS\] == 200", output), output
    assert re.search(r"status +api +OPERATIONAL → MAJOR_OUTAGE", output), output
    assert "Traceback" not in output, output

    # The user's own database and vhost hold nothing of the demo: a later `pulse run` finds none of it.
    assert Component.select().count() == 0 and Incident.select().count() == 0
    assert all(q["messages_ready"] == 0 for q in admin.management_queues(rabbit).values())
    demo = own(settings)
    setup_database(demo)
    try:
        incident = Incident.get(Incident.resolved_at.is_null())
        assert incident.title == "Public API is down"
        sent = Notification.select().where(Notification.status == "sent", Notification.kind == "webhook")
        assert {n.event.type for n in sent} >= {"incident.opened"}
    finally:
        db.close()
        setup_database(settings, max_connections=10)
    # The workers and the scheduler are gone: no consumer is left on any queue.
    wait_for(
        lambda: all(q["consumers"] == 0 for q in admin.management_queues(demo).values()),
        "the workers' consumers to go",
        timeout=30,
        every=1,
    )

    # The README's test command: the Pythons that are not on PATH are skipped, the rest runs.
    skipped = subprocess.run(
        ["bash", "-c", ". .venv/bin/activate && tox -e py311,py312,py313 --notest"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_AND_RUN_S,
    )
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    for missing in ("py312", "py313"):
        assert f"{missing}: skipped because could not find python interpreter" in skipped.stdout, skipped.stdout
    assert "py311: OK" in skipped.stdout, skipped.stdout
