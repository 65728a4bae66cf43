"""Checks from several locations: a component that lists ``locations`` is checked from each of
them, and its status follows what a quorum of them sees, not one network's hiccup.

A location is a name and the workers that run ``dramatiq pulse.actors`` with ``PULSE_LOCATION``
set to it, anywhere that reaches RabbitMQ: they consume their own queue (`queue`), check, and
publish each result to the `RESULTS` exchange with their name as routing key. They need no
database: what a check needs travels sealed with their location's key (`pulse.locations.wire`),
and their RabbitMQ user may configure nothing and write nothing but their own results
(docs/locations.md).

The central workers send each slot of such a component to each of its locations
(`pulse.locations.dispatch`), record each location's result, and take the verdict once per slot
(`pulse.locations.verdict`, by `pulse.locations.quorum`).
"""

from __future__ import annotations

import re

from pulse.rabbitmq import RESULTS

__all__ = ["RECORDED_ON", "RESULTS", "RESULTS_ACTOR", "permissions", "queue"]

#: The queue whose central workers record locations' results (`RESULTS` is bound to it).
RECORDED_ON = "uptime"

#: The actor that records a location's results (`actors.uptime.location_results`): the only one a
#: message arriving through `RESULTS` may name.
RESULTS_ACTOR = "location_results"


def queue(location: str) -> str:
    """The queue a location's workers consume: ``uptime.<location>``."""
    return f"uptime.{location}"


def permissions(location: str) -> dict[str, str]:
    """The RabbitMQ permissions of a location's user (regular expressions, as ``rabbitmqctl
    set_permissions`` and ``set_topic_permissions`` take them): configure nothing (its workers
    only check that its queues exist: the central workers made them, so it can neither delete
    nor redeclare them with other arguments), read its queue and ``.DQ``, write to `RESULTS`
    only, with its own name only as routing key. Nothing else: not the default exchange (every
    queue), not another location's queue or name."""
    own = re.escape(queue(location))
    return {
        "configure": "^$",
        "write": rf"^{re.escape(RESULTS)}$",
        "read": rf"^{own}(\.DQ)?$",
        "topic_write": rf"^{re.escape(location)}$",
        "topic_read": "^$",
    }
