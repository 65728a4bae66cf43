"""Puts the message being processed into the log context of its thread."""

from __future__ import annotations

import functools
import inspect
import logging
from typing import Any

import dramatiq

from pulse import logging as pulse_logging

logger = logging.getLogger(__name__)
# Argument names that identify what a message concerns, and their log field.
ID_FIELDS = {"organization_id": "organizationId", "component_id": "componentId"}


class LogContext(dramatiq.Middleware):
    """Adds ``worker`` (the queue), ``jobId`` (the message id) and, when the actor takes an
    ``organization_id`` or ``component_id`` argument, ``organizationId`` and ``componentId`` to
    every log line written while the message is processed.

    A message processed successfully ends with one INFO line, ``checks completed in 41 ms: 16
    components``, with ``actor``, ``durationMs`` (timed by `pulse.telemetry.middleware.Telemetry`) and
    the ``componentIds`` a batch bound; at DEBUG, one line more per component, with its
    ``componentId``. A failed attempt has its own line (`pulse.middleware.retries`).
    """

    def before_process_message(self, broker: dramatiq.Broker, message: Any) -> None:
        fields = {"worker": message.queue_name, "jobId": message.message_id}
        actor = broker.actors.get(message.actor_name)
        for name, (field, position) in _id_parameters(actor.fn if actor else None).items():
            if name in message.kwargs:
                fields[field] = message.kwargs[name]
            elif position is not None and position < len(message.args):
                fields[field] = message.args[position]
        pulse_logging.start(fields)

    def after_process_message(
        self, broker: dramatiq.Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        if exception is None:
            completed(message.actor_name)
        pulse_logging.clear()

    def after_skip_message(self, broker: dramatiq.Broker, message: Any) -> None:
        pulse_logging.clear()


def completed(actor: str) -> None:
    """Log that the message being processed, of ``actor``, succeeded, with its log context."""
    if not logger.isEnabledFor(logging.INFO):
        return
    context = pulse_logging.current()
    duration = context.get("durationMs")
    component_ids = context.get("componentIds") or ()
    took = "" if duration is None else f" in {duration} ms"
    counted = f": {len(component_ids)} components" if component_ids else ""
    logger.info("%s completed%s%s", actor, took, counted, extra={"actor": actor})
    if component_ids and logger.isEnabledFor(logging.DEBUG):
        for component_id in component_ids:
            logger.debug("%s completed: component %s", actor, component_id, extra={"componentId": component_id})


@functools.cache
def _id_parameters(fn: Any) -> dict[str, tuple[str, int | None]]:
    """The id parameters an actor function takes: name -> (log field, position or None)."""
    if fn is None:
        return {name: (field, None) for name, field in ID_FIELDS.items()}
    found = {}
    for position, parameter in enumerate(inspect.signature(fn).parameters.values()):
        if parameter.name in ID_FIELDS:
            positional = parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
            found[parameter.name] = (ID_FIELDS[parameter.name], position if positional else None)
    return found
