"""JSON log lines: ``level`` (``info``), ``time`` (UTC, ``2026-12-04T14:00:00.123Z``), ``logger``,
``msg``, and while a message is processed ``worker`` (its queue), ``jobId`` (its message id),
``organizationId`` and ``componentId`` (``componentIds`` for a batch of checks, ``calculatedMetricIds``
for one of calculated metrics, ``metricsQueryIds`` for one of polls).

The log-context middleware fills the context per message; an actor that learns more (the
organization of the component it loaded) adds it with `bind`.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from datetime import UTC, datetime
from typing import Any

from pythonjsonlogger.json import JsonFormatter

LOST = re.compile(r"connect|socket|stream", re.IGNORECASE)  # what pika says of a lost or refused connection

_context = threading.local()


def bind(**fields: Any) -> None:
    """Add fields to the log context of the current thread (until `clear`)."""
    current = getattr(_context, "fields", None)
    _context.fields = {**(current or {}), **fields}


def start(fields: dict[str, Any]) -> None:
    """Replace the log context of the current thread (a new message begins)."""
    _context.fields = fields


def clear() -> None:
    _context.fields = None


def current() -> dict[str, Any]:
    """The log context of the current thread (empty outside a message)."""
    return getattr(_context, "fields", None) or {}


class ContextFilter(logging.Filter):
    """Copies the current thread's context onto each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        fields = getattr(_context, "fields", None)
        if fields:
            for key, value in fields.items():
                if value is not None:
                    setattr(record, key, value)
        return True


class ConnectionLoss(logging.Filter):
    """A lost RabbitMQ connection (a node restarted or gone) is an expected failure, which dramatiq
    reports at CRITICAL for each consumer, beside pika's ERROR lines (with stacks) and a line on the
    restart: one WARNING line per consumer instead, with the reason and what happens next. (A
    publisher's lost connection is retried, or reported, by its caller.)"""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("pika."):  # pika narrates a lost connection at ERROR, with stacks
            return record.levelno < logging.ERROR or not LOST.search(record.getMessage())
        if not record.name.startswith("dramatiq.worker.ConsumerThread"):
            return True
        message = record.getMessage()
        if message.startswith("Restarting consumer in"):
            return False
        if message.startswith("Consumer encountered a connection error"):
            reason = message.partition(": ")[2]
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg, record.args = (
                "RabbitMQ connection lost (%s): reconnecting in 3 s, to the first node that answers.",
                (reason,),
            )
        return True


class Formatter(JsonFormatter):
    """One JSON object a line, in the common spellings: ``"level": "info"`` and UTC times ending in ``Z``."""

    def __init__(self) -> None:
        super().__init__(
            "%(levelname)s %(asctime)s %(name)s %(message)s",
            rename_fields={"levelname": "level", "asctime": "time", "name": "logger", "message": "msg"},
        )

    def add_fields(self, log_record: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        super().add_fields(log_record, record, message_dict)
        log_record["level"] = record.levelname.lower()

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        return datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{record.msecs:03.0f}Z"


def configure(level: str) -> None:
    """Make every root handler write JSON lines (adding one on stderr if there is none)."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler(sys.stderr))
    for handler in root.handlers:
        handler.setFormatter(Formatter())
        for kind in (ContextFilter, ConnectionLoss):
            if not any(isinstance(f, kind) for f in handler.filters):
                handler.addFilter(kind())
    root.setLevel(level)
    # pika narrates every connection and channel at INFO.
    logging.getLogger("pika").setLevel(max(logging.WARNING, root.level))
    # peewee logs every statement with its parameters at DEBUG: channel settings and secrets among them.
    logging.getLogger("peewee").setLevel(max(logging.INFO, root.level))
