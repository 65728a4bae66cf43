"""Components and their status: the one state machine that uptime checks (and, next, metric
thresholds and calculated metrics) drive. `status` holds the vocabulary and the pure threshold
rule, `changes` applies a change once (counters, incident, events), `incidents` opens and
resolves incidents."""

from __future__ import annotations

from pulse.models import Component
from pulse.models.organization import find_by_key


def find(name: str) -> Component:
    """A component by KEY, or ORGANIZATION/KEY; LookupError says what is wrong."""
    return find_by_key(Component, name, "component", " (see `pulse status`)")
