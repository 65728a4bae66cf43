"""What checks mean for a component's status: pure rules, no database.

A check's conditions give the status it observed; thresholds decide when that becomes the
component's status, so one blip pages no one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

OPERATIONAL = "OPERATIONAL"
DEGRADED = "DEGRADED_PERFORMANCE"
PARTIAL_OUTAGE = "PARTIAL_OUTAGE"
MAJOR_OUTAGE = "MAJOR_OUTAGE"
MAINTENANCE = "UNDER_MAINTENANCE"

OUTAGES = frozenset({PARTIAL_OUTAGE, MAJOR_OUTAGE})


def observed(failed_response_time_only: Sequence[bool], error: str | None) -> str:
    """The status one check observed.

    Parameters:
      failed_response_time_only: for each failed condition, whether it tests only [RESPONSE_TIME].
      error: why the HTTP exchange did not complete (refused, timed out…), or None.
    """
    if error is not None:
        return MAJOR_OUTAGE
    if not failed_response_time_only:
        return OPERATIONAL
    return DEGRADED if all(failed_response_time_only) else MAJOR_OUTAGE


@dataclasses.dataclass(frozen=True)
class State:
    status: str
    failures: int = 0  # consecutive failing checks
    successes: int = 0  # consecutive passing checks


def transition(
    state: State, seen: str, *, failure_threshold: int, success_threshold: int, in_maintenance: bool = False
) -> State:
    """The component's state after one more check that observed ``seen``.

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
