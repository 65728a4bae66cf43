"""The machine's PostgreSQL and RabbitMQ, restarted by the drills marked ``restarts``.

Every test run on the machine shares them, so a drill that restarts one runs alone: tox's `drills`
environment runs those drills after every other environment, one at a time, and the other drills
beside each other (pytest-xdist). Called from an xdist worker, a restart refuses: the drill lacks
its mark.
"""

import os
import subprocess
import time

import pytest

from pulse.db import db


def _alone() -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.fail("a drill restarting PostgreSQL or RabbitMQ must be marked `restarts`: it runs alone")


def restart_postgres() -> float:
    """Restart the machine's PostgreSQL cluster and drop this process's dead connections; how long
    the restart took (seconds)."""
    _alone()
    started = time.monotonic()
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    if not db.is_closed():  # this process's own connections died too
        db.close()
    db.close_all()
    return time.monotonic() - started


def rabbitmqctl(*args: str) -> None:
    """``rabbitmqctl ARGS`` against the machine's node (``stop_app``, ``start_app``)."""
    _alone()
    subprocess.run(["rabbitmqctl", *args], check=True, capture_output=True, timeout=120)
