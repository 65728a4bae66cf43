"""Messages on the wire: dramatiq's JSON, and a readable dead letter for a body that is not one.

dramatiq's RabbitMQ consumer nacks a body it cannot decode straight to the ``.XQ``, before any
middleware sees it, so nothing would record why. Pulse's encoder turns such a body into a message
for the actor `UNDECODABLE`, which no worker has: the worker dead-letters it through the usual
path, and the dead-letters middleware records the problem and a preview of the body.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from dramatiq.encoder import JSONEncoder, MessageData
from dramatiq.errors import DecodeError

UNDECODABLE = "undecodable"
PREVIEW = 1000  # characters of the body kept in the dead letter
_FIELDS = {
    "queue_name": str,
    "actor_name": str,
    "args": list,
    "kwargs": dict,
    "options": dict,
    "message_id": str,
    "message_timestamp": int,
}
_NAMESPACE = uuid.UUID("6f1c2c52-8d0e-4a43-9b0f-2f8c1f5d7a10")


class Encoder(JSONEncoder):
    """dramatiq's JSON encoder; a body that is not a dramatiq message decodes as an `UNDECODABLE` one."""

    def decode(self, data: bytes) -> MessageData:
        try:
            fields = super().decode(data)
        except DecodeError as e:
            what = "UTF-8" if isinstance(e.error, UnicodeDecodeError) else "JSON"
            return undecodable(data, f"the body is not {what} ({e.error})")
        problem = _problem(fields)
        return undecodable(data, problem) if problem else fields


def _problem(fields: Any) -> str | None:
    if not isinstance(fields, dict):
        return f"the body is JSON but not a message (a {type(fields).__name__}, not an object)"
    for name, kind in _FIELDS.items():
        if not isinstance(fields.get(name), kind) or isinstance(fields.get(name), bool):
            return f"the body is JSON but not a message: {name} is missing or not a {kind.__name__}"
    extra = sorted(set(fields) - set(_FIELDS))
    return f"the body is JSON but not a message: unknown field(s) {', '.join(extra)}" if extra else None


def undecodable(data: bytes, problem: str) -> MessageData:
    """The stand-in message for ``data``; the same body always gets the same message id."""
    return {
        "queue_name": "(unknown)",
        "actor_name": UNDECODABLE,
        "args": [],
        "kwargs": {},
        "options": {"problem": problem, "body": data[:PREVIEW].decode("utf-8", "replace")},
        "message_id": str(uuid.uuid5(_NAMESPACE, data.hex())),
        "message_timestamp": int(time.time() * 1000),
    }
