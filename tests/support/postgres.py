"""PostgreSQL for the drills: restarting the cluster the tests use."""

import os
import subprocess
import time

from pulse.db import db


def restart_postgres() -> float:
    """Restart the machine's PostgreSQL cluster and drop this process's dead connections; how long
    the restart took (seconds)."""
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
