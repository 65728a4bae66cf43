"""A component's status: the one vocabulary, and the pure rule (no database) that turns what a
check or a metric observed into the component's status under its thresholds, so one blip pages
no one."""

from __future__ import annotations

import dataclasses

OPERATIONAL = "OPERATIONAL"
DEGRADED = "DEGRADED_PERFORMANCE"
PARTIAL_OUTAGE = "PARTIAL_OUTAGE"
MAJOR_OUTAGE = "MAJOR_OUTAGE"
MAINTENANCE = "UNDER_MAINTENANCE"

OUTAGES = frozenset({PARTIAL_OUTAGE, MAJOR_OUTAGE})
UP = (OPERATIONAL, DEGRADED)  # a slow answer is up, as status pages count it
UNKNOWN = "UNKNOWN"  # the outcome of a slot nobody checked (pulse.uptime.missed): neither up nor down


@dataclasses.dataclass(frozen=True)
class State:
    status: str
    failures: int = 0  # consecutive failing observations
    successes: int = 0  # consecutive passing observations


def transition(
    state: State, seen: str, *, failure_threshold: int, success_threshold: int, in_maintenance: bool = False
) -> State:
    """The component's state after one more observation (a check, a metric) of ``seen``.

    A failing streak of ``failure_threshold`` checks sets the observed failing status; a passing
    streak of ``success_threshold`` checks brings any other status back to OPERATIONAL. During
    maintenance the component shows UNDER_MAINTENANCE and its streaks start over.
    """
    if in_maintenance:
        return State(MAINTENANCE)
    if seen == OPERATIONAL:
        successes = state.successes + 1
        status = OPERATIONAL if successes >= success_threshold else state.status
        return State(status, 0, successes)
    failures = state.failures + 1
    return State(seen if failures >= failure_threshold else state.status, failures, 0)
