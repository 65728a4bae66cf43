"""Puts the message being processed into the log context of its thread."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import dramatiq

from pulse import logging as pulse_logging

# Argument names that identify what a message concerns, and their log field.
ID_FIELDS = {"organization_id": "organizationId", "component_id": "componentId"}


class LogContext(dramatiq.Middleware):
    """Adds ``worker`` (the queue), ``jobId`` (the message id) and, when the actor takes an
    ``organization_id`` or ``component_id`` argument, ``organizationId`` and ``componentId`` to
    every log line written while the message is processed.
    """

    def before_process_message(self, broker: dramatiq.Broker, message: Any) -> None:
        fields = {"worker": message.queue_name, "jobId": message.message_id}
        try:
            actor = broker.get_actor(message.actor_name)
            bound = _signature(actor.fn).bind_partial(*message.args, **message.kwargs).arguments
        except (dramatiq.errors.ActorNotFound, TypeError, ValueError):
            bound = message.kwargs
        for name, field in ID_FIELDS.items():
            if name in bound:
                fields[field] = bound[name]
        pulse_logging.clear()
        pulse_logging.bind(**fields)

    def after_process_message(
        self, broker: dramatiq.Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        pulse_logging.clear()

    after_skip_message = after_process_message  # type: ignore[assignment]


@functools.cache
def _signature(fn: Any) -> inspect.Signature:
    return inspect.signature(fn)
