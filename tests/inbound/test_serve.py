"""`pulse serve` as it is run: a process that answers on its port, counts on its telemetry port,
and stops gracefully on SIGTERM; `pulse oncall ack-server` runs the same service."""

import os
import signal
import subprocess
import sys

import pytest
import requests

from tests.support.env import ENV
from tests.support.worker import free_port


@pytest.mark.parametrize("command", [["serve"], ["oncall", "ack-server"]])
def test_it_serves_until_sigterm(settings, command):
    port, metrics = free_port(), free_port()
    env = {**os.environ, **ENV, "PULSE_SERVE_METRICS_PORT": str(metrics), "PULSE_ACK_SECRET": "s" * 40}
    process = subprocess.Popen(
        [sys.executable, "-m", "pulse.cli", *command, "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline().startswith(f"serving on http://127.0.0.1:{port} ")
        answered = requests.get(f"http://127.0.0.1:{port}/ack", timeout=5)  # it listens before it says so
        assert answered.status_code == 403 and answered.headers["Cache-Control"] == "no-store"
        scraped = requests.get(f"http://127.0.0.1:{metrics}/metrics", timeout=5).text
        assert 'inbound_requests_total{code="403",route="/ack"} 1.0' in scraped

        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0
    finally:
        process.kill()
        process.wait()
    assert "Traceback" not in process.stderr.read()
