"""`pulse health`: is the broker reachable, the database migrated, the scheduler ticking?"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from pulse import rabbitmq
from pulse.config import Settings
from pulse.db import db, pending_migrations
from pulse.models import Heartbeat, utcnow
from pulse.models.heartbeat import SCHEDULER


@dataclasses.dataclass
class Check:
    name: str
    ok: bool
    detail: str


def check_broker(settings: Settings) -> str:
    with rabbitmq.channel(settings, attempts=1):  # within the container HEALTHCHECK's 10 s
        return "RabbitMQ answered"


def check_database(settings: Settings) -> str:
    db.execute_sql("SELECT 1")
    pending = pending_migrations(settings)
    if pending:
        raise RuntimeError(f"{len(pending)} migration(s) not applied: run `pulse migrate`")
    return "PostgreSQL answered, schema up to date"


def check_scheduler(settings: Settings) -> str:
    row = Heartbeat.get_or_none(Heartbeat.name == SCHEDULER)
    if row is None:
        raise RuntimeError("no scheduler heartbeat yet: is `periodiq pulse.actors` running, and a worker on 'cleanup'?")
    age = (utcnow() - row.beat_at).total_seconds()
    if age > settings.heartbeat_max_age:
        raise RuntimeError(
            f"last scheduler heartbeat {age:.0f} s ago (limit {settings.heartbeat_max_age} s): "
            "is `periodiq pulse.actors` running, and a worker on 'cleanup'?"
        )
    return f"last heartbeat {age:.0f} s ago"


CHECKS: dict[str, Callable[[Settings], str]] = {
    "broker": check_broker,
    "database": check_database,
    "scheduler": check_scheduler,
}


def run_checks(settings: Settings) -> list[Check]:
    results: list[Check] = []
    for name, check in CHECKS.items():
        if name == "scheduler" and not results[-1].ok:
            results.append(Check(name, False, "unknown: the database is not available"))
            continue
        try:
            results.append(Check(name, True, check(settings)))
        except Exception as e:  # noqa: BLE001 - every failure is a reason to report
            results.append(Check(name, False, str(e) or type(e).__name__))
    return results
