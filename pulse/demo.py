"""`pulse demo`: Pulse against a bundled target whose API flaps, told as it happens.

The demo starts a local HTTP server (the target and a webhook receiver), applies `demo.yaml`
against it, and runs the real workers and scheduler (`pulse run`). While they run it prints each
check, status change and incident from the database, and each webhook the receiver gets, with its
signature checked. Ctrl-C stops everything.
"""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import os
import secrets
import threading
import time
from datetime import datetime
from importlib.resources import files
from typing import Any

import dramatiq
import peewee
from rich.console import Console
from rich.markup import escape

from pulse import configfile, run
from pulse.broker import setup_broker
from pulse.config import Settings
from pulse.db import db
from pulse.db import migrate as run_migrations
from pulse.models.event import INCIDENT_OPENED, INCIDENT_RESOLVED, STATUS_CHANGED

SLUG = "demo"
# The API is down DOWN_FOR seconds of every CYCLE, from DOWN_AT seconds after the start: with
# checks every 15 s and a failure threshold of 2, the incident opens within about a minute.
DOWN_AT, DOWN_FOR, CYCLE = 10.0, 45.0, 150.0
SLOW_S = 0.8  # the search endpoint's answer time, above its 500 ms condition

console = Console(highlight=False, soft_wrap=True)


class Target(http.server.ThreadingHTTPServer):
    """The demo's endpoints and its webhook receiver, on a free local port."""

    daemon_threads = True

    def __init__(self, secret: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.secret = secret
        self.started = time.monotonic()
        self.url = f"http://127.0.0.1:{self.server_address[1]}"

    def api_down(self) -> bool:
        elapsed = time.monotonic() - self.started - DOWN_AT
        return elapsed >= 0 and elapsed % CYCLE < DOWN_FOR


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Target
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path == "/":
            self._answer(200, b"<h1>Demo Inc.</h1>", "text/html")
        elif self.path == "/api/health":
            down = self.server.api_down()
            self._answer(503 if down else 200, json.dumps({"status": "DOWN" if down else "UP"}).encode())
        elif self.path == "/search":
            time.sleep(SLOW_S)
            self._answer(200, b'{"results": []}')
        else:
            self._answer(404, b'{"error": "not found"}')

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/hooks/pulse":
            self._answer(404, b"")
            return
        signed = verify(self.server.secret, self.headers.get("X-Pulse-Timestamp", ""), body, self.headers)
        self._answer(204 if signed else 401, b"")
        received(json.loads(body), signed)

    def _answer(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass


def verify(secret: str, timestamp: str, body: bytes, headers: Any) -> bool:
    """What a webhook receiver should do: recompute the signature and compare in constant time."""
    expected = "v1=" + hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers.get("X-Pulse-Signature", ""))


def received(payload: dict[str, Any], signed: bool) -> None:
    check = "signature ok" if signed else "[red]BAD SIGNATURE[/]"
    say("webhook", "magenta", f"{escape(payload['type'])}: {escape(payload['title'])} ({check})")


def say(kind: str, color: str, text: str) -> None:
    console.print(f"{datetime.now():%H:%M:%S}  [{color}]{kind:<8}[/] {text}")


class Feed:
    """Prints the demo organization's new checks and events, read from the database (called by
    `pulse run`'s loop every 0.2 s)."""

    def __init__(self) -> None:
        row = db.execute_sql(
            "SELECT (SELECT coalesce(max(id), 0) FROM uptime_check), (SELECT coalesce(max(id), 0) FROM event)"
        ).fetchone()
        self.last_check, self.last_event = row
        self.failing = False

    def __call__(self) -> None:
        try:
            self._checks()
            self._events()
            self.failing = False
        except (peewee.OperationalError, peewee.InterfaceError) as e:  # PostgreSQL restarting must not end the demo
            if not self.failing:
                say("warning", "red", f"cannot read the database: {escape(type(e).__name__)}")
            self.failing = True
            db.close()

    def _checks(self) -> None:
        rows = db.execute_sql(
            "SELECT u.id, c.key, u.status_code, u.response_time_ms, u.success, u.outcome, u.error,"
            " u.condition_results FROM uptime_check u JOIN component c ON c.id = u.component_id"
            " JOIN organization o ON o.id = c.organization_id"
            " WHERE o.slug = %s AND u.id > %s ORDER BY u.id",
            (SLUG, self.last_check),
        ).fetchall()
        for row_id, key, code, ms, success, outcome, error, results in rows:
            self.last_check = row_id
            answer = escape(error or f"{code} in {ms} ms")
            if success:
                say("check", "cyan", f"{key:<8} {answer}  [green]pass[/]")
                continue
            color = "yellow" if outcome == "DEGRADED_PERFORMANCE" else "red"
            failed = [r["condition"] for r in results if not r["success"]]
            say("check", "cyan", f"{key:<8} {answer}  [{color}]FAIL[/] {escape(', '.join(failed))}")

    def _events(self) -> None:
        rows = db.execute_sql(
            "SELECT e.id, e.type, e.payload FROM event e JOIN organization o ON o.id = e.organization_id"
            " WHERE o.slug = %s AND e.id > %s ORDER BY e.id",
            (SLUG, self.last_event),
        ).fetchall()
        for row_id, kind, payload in rows:
            self.last_event = row_id
            key = payload["component"]["key"]
            if kind == STATUS_CHANGED:
                say("status", "yellow", f"{key:<8} {payload['from']} → [bold]{payload['to']}[/]")
            elif kind in (INCIDENT_OPENED, INCIDENT_RESOLVED):
                incident = payload["incident"]
                verb = "[red]opened[/]" if kind == INCIDENT_OPENED else "[green]resolved[/]"
                say("incident", "bold", f"{key:<8} #{incident['id']} {verb}: {escape(incident['title'])}")


def start_scheduler_loop(settings: Settings) -> None:
    """Send the uptime scheduler's tick now rather than wait for periodiq's next minute."""
    broker = setup_broker(settings)
    broker.enqueue(dramatiq.Message(queue_name="uptime", actor_name="schedule", args=(), kwargs={}, options={}))
    broker.close()


def run_demo(settings: Settings, threads: int) -> int:
    target = Target(secrets.token_urlsafe(16))
    threading.Thread(target=target.serve_forever, name="demo-target", daemon=True).start()
    try:
        for name in run_migrations(settings):
            console.print(f"applied {name}")
        os.environ.update(PULSE_DEMO_TARGET=target.url, PULSE_DEMO_SECRET=target.secret)
        text = files("pulse").joinpath("demo.yaml").read_text(encoding="utf-8")
        configfile.apply(configfile.load(text))
        feed = Feed()
        # The workers' JSON logs would drown the story: warnings only, unless asked for.
        level = os.environ.get("PULSE_LOG_LEVEL", "WARNING")
        env = {**os.environ, "PULSE_LOG_LEVEL": level}
        start_scheduler_loop(settings)
        console.print(
            f"[bold]Pulse demo[/]: target and webhook receiver on {target.url}\n"
            f"  website  {target.url}/            always up\n"
            f"  api      {target.url}/api/health  down {DOWN_FOR:.0f} s of every {CYCLE:.0f} s,"
            f" from {DOWN_AT:.0f} s after the start\n"
            f"  search   {target.url}/search      answers in {SLOW_S} s, over its 500 ms condition\n"
            f"Checks every 15 s; the configuration is pulse/demo.yaml. Workers log at {level} and above.\n"
            "[bold]Ctrl-C[/] stops everything.\n"
        )
        code = run.run(1, threads, env=env, watch=feed)
    except KeyboardInterrupt:  # Ctrl-C before the workers started
        code = 130
    finally:
        target.shutdown()
        target.server_close()
    console.print("demo stopped")
    return code
