"""`pulse health`: three probes. Is the broker reachable, the database migrated, the scheduler ticking?"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from pulse import rabbitmq
from pulse.config import Settings
from pulse.db import db, pending_migrations
from pulse.models import Heartbeat, utcnow
from pulse.models.heartbeat import SCHEDULER


@dataclasses.dataclass
class Probe:
    name: str
    ok: bool
    detail: str


def probe_broker(settings: Settings) -> str:
    with rabbitmq.channel(settings, attempts=1):  # within the container HEALTHCHECK's 10 s
        return "RabbitMQ answered"


def probe_database(settings: Settings) -> str:
    db.execute_sql("SELECT 1")
    pending = pending_migrations(settings)
    if pending:
        raise RuntimeError(f"{len(pending)} migration(s) not applied: run `pulse migrate`")
    return "PostgreSQL answered, schema up to date"


def probe_scheduler(settings: Settings) -> str:
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


PROBES: dict[str, Callable[[Settings], str]] = {
    "broker": probe_broker,
    "database": probe_database,
    "scheduler": probe_scheduler,
}


def probe_all(settings: Settings) -> list[Probe]:
    """Every probe's answer, in order; the scheduler's is unknown when the database is down."""
    results: list[Probe] = []
    for name, probe in PROBES.items():
        if name == "scheduler" and not results[-1].ok:
            results.append(Probe(name, False, "unknown: the database is not available"))
            continue
        try:
            results.append(Probe(name, True, probe(settings)))
        except Exception as e:  # noqa: BLE001 - every failure is a reason to report
            results.append(Probe(name, False, str(e) or type(e).__name__))
    return results
