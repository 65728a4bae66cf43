"""What the demo prints: each check, status change and incident of the demo organization as the
workers record them (read from the database), and each webhook the receiver gets."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import peewee
from rich.console import Console
from rich.markup import escape as escape_markup

from pulse.db import db
from pulse.models.event import INCIDENT_OPENED, INCIDENT_RESOLVED, STATUS_CHANGED
from pulse.terminal import printable

SLUG = "demo"

console = Console(highlight=False, soft_wrap=True)


def escape(text: str) -> str:
    """A name, a title or an error, shown as it is: neither markup nor terminal escape sequences."""
    return escape_markup(printable(text, one_line=True))


def received(payload: dict[str, Any], signed: bool) -> None:
    mark = "signature ok" if signed else "[red]BAD SIGNATURE[/]"
    say("webhook", "magenta", f"{escape(payload['type'])}: {escape(payload['title'])} ({mark})")


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
                say("check", "cyan", f"{escape(key):<8} {answer}  [green]pass[/]")
                continue
            color = "yellow" if outcome == "DEGRADED_PERFORMANCE" else "red"
            failed = [r["condition"] for r in results if not r["success"]]
            say("check", "cyan", f"{escape(key):<8} {answer}  [{color}]FAIL[/] {escape(', '.join(failed))}")

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
                say("status", "yellow", f"{escape(key):<8} {payload['from']} → [bold]{payload['to']}[/]")
            elif kind in (INCIDENT_OPENED, INCIDENT_RESOLVED):
                incident = payload["incident"]
                verb = "[red]opened[/]" if kind == INCIDENT_OPENED else "[green]resolved[/]"
                say("incident", "bold", f"{escape(key):<8} #{incident['id']} {verb}: {escape(incident['title'])}")
