"""`pulse demo`: Pulse against a bundled target whose API flaps, told as it happens.

The demo starts a local HTTP server (`server`: the target and a webhook receiver), applies
`demo.yaml` against it, and runs the real workers and scheduler (`pulse run`). While they run it
prints each check, status change and incident from the database, and each webhook the receiver
gets, with its signature checked (`feed`). Ctrl-C stops everything.
"""

from __future__ import annotations

import os
import secrets
import threading
from importlib.resources import files

import dramatiq

from pulse import configfile
from pulse.broker import setup_broker
from pulse.cli import run
from pulse.config import Settings
from pulse.db import migrate as run_migrations
from pulse.demo.feed import Feed, console
from pulse.demo.server import CYCLE, DOWN_AT, DOWN_FOR, SLOW_S, DemoServer


def start_scheduler_loop(settings: Settings) -> None:
    """Send the uptime scheduler's tick now rather than wait for periodiq's next minute."""
    broker = setup_broker(settings)
    broker.enqueue(dramatiq.Message(queue_name="uptime", actor_name="schedule", args=(), kwargs={}, options={}))
    broker.close()


def run_demo(settings: Settings, threads: int) -> int:
    server = DemoServer(secrets.token_urlsafe(16))
    threading.Thread(target=server.serve_forever, name="demo-target", daemon=True).start()
    try:
        for name in run_migrations(settings):
            console.print(f"applied {name}")
        os.environ.update(PULSE_DEMO_TARGET=server.url, PULSE_DEMO_SECRET=server.secret)
        text = files("pulse.demo").joinpath("demo.yaml").read_text(encoding="utf-8")
        configfile.apply(configfile.load(text))
        feed = Feed()
        # The workers' JSON logs would drown the story: warnings only, unless asked for.
        level = os.environ.get("PULSE_LOG_LEVEL", "WARNING")
        env = {**os.environ, "PULSE_LOG_LEVEL": level}
        start_scheduler_loop(settings)
        console.print(
            f"[bold]Pulse demo[/]: target and webhook receiver on {server.url}\n"
            f"  website  {server.url}/            always up\n"
            f"  api      {server.url}/api/health  down {DOWN_FOR:.0f} s of every {CYCLE:.0f} s,"
            f" from {DOWN_AT:.0f} s after the start\n"
            f"  search   {server.url}/search      answers in {SLOW_S} s, over its 500 ms condition\n"
            f"Checks every 15 s; the configuration is pulse/demo/demo.yaml. Workers log at {level} and above.\n"
            "[bold]Ctrl-C[/] stops everything.\n"
        )
        code = run.supervise(1, threads, env=env, watch=feed)
    except KeyboardInterrupt:  # Ctrl-C before the workers started
        code = 130
    finally:
        server.shutdown()
        server.server_close()
    console.print("demo stopped")
    return code
