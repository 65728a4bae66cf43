"""`pulse demo` in its own database and vhost, stopped by a signal to its main process alone."""

import signal
import subprocess
import sys
import threading

from pulse.db import db
from pulse.demo import own
from pulse.models import Component
from pulse.rabbitmq import admin
from tests.support.env import ENV
from tests.support.wait import wait_for
from tests.support.worker import ROOT, free_port


def test_the_demo_keeps_to_its_own_world_and_stops_cleanly_on_a_signal(settings, database, rabbit):
    env = {**ENV, "PATH": "/usr/bin:/bin", "PULSE_METRICS_PORT": str(free_port()), "PYTHONUNBUFFERED": "1"}
    env.pop("PULSE_LOG_LEVEL")  # the demo's own default: warnings only
    demo = subprocess.Popen(
        [sys.executable, "-m", "pulse.cli", "demo", "--threads", "8"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(demo.stdout or []), daemon=True).start()
    try:
        wait_for(lambda: any(" check " in line for line in lines), "the demo's first check", timeout=60, every=0.2)
    finally:
        demo.send_signal(signal.SIGINT)  # to its main process only, as `kill -INT PID` or a process manager
    code = demo.wait(90)
    output = "".join(lines)

    assert code == 0 and "demo stopped" in output, output
    assert "Traceback" not in output and "ERROR" not in output and '"level": "error"' not in output, output
    # The demo's components, checks and messages are in its own database and vhost ...
    demo_settings = own(settings)
    assert demo_settings.database_name == f"{settings.database_name}_demo"
    assert demo_settings.vhost == f"{settings.vhost}_demo"
    assert "uptime" in admin.management_queues(demo_settings)
    # ... and none in the configured ones.
    assert Component.select().count() == 0
    assert db.execute_sql("SELECT count(*) FROM uptime_check").fetchone()[0] == 0
    # Counted over AMQP: the management API's counts lag up to 5 s behind the fixture's purge.
    ready = admin.ready_counts(settings, admin.management_queues(settings))
    assert not any(ready.values()), ready
