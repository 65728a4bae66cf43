"""The README's quick start, run as a newcomer would: in a fresh copy of the project, its first
command installs Pulse in a new virtualenv and runs the demo; within about a minute the demo's
API goes down, an incident opens and its notification arrives; Ctrl-C stops everything."""

import os
import queue
import re
import shutil
import signal
import subprocess
import threading

import pytest

from pulse import rabbitmq
from pulse.models import Incident, Notification
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
def test_the_quick_start_shows_an_incident_and_its_notification_and_stops_on_ctrl_c(database, rabbit, tmp_path):
    project = tmp_path / "pulse"
    shutil.copytree(ROOT, project, ignore=NOT_COPIED)
    env = {**os.environ, "PULSE_METRICS_PORT": str(free_port())}
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

    incident = Incident.get(Incident.resolved_at.is_null())
    assert incident.title == "Public API is down"
    sent = Notification.select().where(Notification.status == "sent", Notification.kind == "webhook")
    assert {n.event.type for n in sent} >= {"incident.opened"}
    # The workers and the scheduler are gone: no consumer is left on any queue.
    wait_for(
        lambda: all(q["consumers"] == 0 for q in rabbitmq.management_queues(rabbit).values()),
        "the workers' consumers to go",
        timeout=30,
        every=1,
    )
