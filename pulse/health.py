"""`pulse health`: four probes. Is the broker reachable, the database migrated, the scheduler
ticking, and do the worker processes running here (in this container) beat and get on?"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from typing import Any

from pulse import rabbitmq
from pulse.config import Settings
from pulse.db import db, pending_migrations
from pulse.middleware.beat import BEAT_EVERY, beats_directory
from pulse.models import Heartbeat, utcnow
from pulse.models.heartbeat import SCHEDULER
from pulse.runs import alive, live_directories

#: A worker process that has not beaten for this many seconds is frozen, or held by a message
#: stuck in C (which the watchdog replaces `PULSE_TIME_LIMIT_GRACE_S` past its time limit).
STALE_AFTER = 15 * BEAT_EVERY


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
    if age > settings.heartbeat_max_age_s:
        raise RuntimeError(
            f"last scheduler heartbeat {age:.0f} s ago (limit {settings.heartbeat_max_age_s} s): "
            "is `periodiq pulse.actors` running, and a worker on 'cleanup'?"
        )
    return f"last heartbeat {age:.0f} s ago"


def probe_workers(settings: Settings, *, required: bool = False) -> str:
    """The worker processes of the ``dramatiq`` runs on this host (in Docker, this container), read
    from their beats (`pulse.middleware.beat`): each must have beaten in the last `STALE_AFTER`
    seconds, with every consumer running and at least one thread not stuck past its message's time
    limit. None at all is a failure only when ``required`` (a worker's container)."""
    beats = worker_beats(settings.metrics_dir)
    if not beats:
        if required:
            raise RuntimeError("no worker process beats here: is `dramatiq pulse.actors` running in this container?")
        return "no worker runs here"
    now = time.time()
    problems = [problem for beat in beats if (problem := _trouble(beat, now))]
    if problems:
        raise RuntimeError("; ".join(problems))
    threads = sum(beat["threads"] for beat in beats)
    busy = sum(len(beat["running"]) for beat in beats)
    completed = sum(beat["completed"] for beat in beats)
    paused = sorted({name for beat in beats for name in beat["paused"]})
    return f"{len(beats)} process(es) beating, {busy} of {threads} thread(s) busy, {completed} message(s) completed" + (
        f"; paused: {', '.join(paused)} (`pulse queues resume <queue>`)" if paused else ""
    )


def worker_beats(metrics_dir: str) -> list[dict[str, Any]]:
    """The last beat of every live worker process of the live runs under ``metrics_dir``."""
    beats = []
    for run in live_directories(metrics_dir):
        directory = beats_directory(metrics_dir, run)
        for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
            pid = name.removesuffix(".json")
            if not name.endswith(".json") or not pid.isdigit() or not alive(int(pid)):
                continue
            try:
                with open(os.path.join(directory, name)) as file:
                    beats.append(json.load(file))
            except (OSError, ValueError):
                continue  # gone since listed
    return beats


def _trouble(beat: dict[str, Any], now: float) -> str | None:
    pid, age = beat["pid"], now - beat["at"]
    if age > STALE_AFTER:
        return f"worker process {pid} last beat {age:.0f} s ago: frozen, or held by a message stuck in C"
    stopped = sorted(name for name, running in beat["consumers"].items() if not running)
    if stopped:
        return f"worker process {pid}: its consumer of {', '.join(stopped)} stopped"
    overdue = [m for m in beat["running"] if m["until"] < now]
    if beat["threads"] and len(overdue) >= beat["threads"]:
        oldest = min(overdue, key=lambda m: m["since"])
        return (
            f"worker process {pid}: all {beat['threads']} thread(s) stuck past their time limit "
            f"(the oldest: {oldest['actor']} on {oldest['queue']}, running for {now - oldest['since']:.0f} s)"
        )
    return None


PROBES: dict[str, Callable[[Settings], str]] = {
    "broker": probe_broker,
    "database": probe_database,
    "scheduler": probe_scheduler,
    "workers": probe_workers,
}


def probe_all(settings: Settings, *, worker: bool = False) -> list[Probe]:
    """Every probe's answer, in order; the scheduler's is unknown when the database is down.
    ``worker``: this is a worker's container, where a worker process must beat."""
    results: list[Probe] = []
    for name, probe in PROBES.items():
        if name == "scheduler" and not results[-1].ok:
            results.append(Probe(name, False, "unknown: the database is not available"))
            continue
        try:
            detail = probe_workers(settings, required=worker) if name == "workers" else probe(settings)
            results.append(Probe(name, True, detail))
        except Exception as e:  # noqa: BLE001 - every failure is a reason to report
            results.append(Probe(name, False, str(e) or type(e).__name__))
    return results
