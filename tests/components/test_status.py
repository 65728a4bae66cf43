"""A component's status from what its checks observe (`pulse.components.status`): thresholds and maintenance."""

import pytest

from pulse.components.status import DEGRADED, MAINTENANCE, MAJOR_OUTAGE, OPERATIONAL, State, transition

O, D, M, W = OPERATIONAL, DEGRADED, MAJOR_OUTAGE, MAINTENANCE  # noqa: E741 - a table reads better


def run(start, seen, failure=3, success=2, maintenance=()):
    state = State(start)
    statuses = []
    for i, s in enumerate(seen):
        state = transition(
            state, s, failure_threshold=failure, success_threshold=success, in_maintenance=i in maintenance
        )
        statuses.append(state.status)
    return statuses


@pytest.mark.parametrize(
    "start, seen, failure, success, expected",
    [
        # One blip pages no one; a sustained outage does.
        (O, [M, O, O], 3, 2, [O, O, O]),
        (O, [M, M, O], 3, 2, [O, O, O]),
        (O, [M, M, M], 3, 2, [O, O, M]),
        (O, [M, M, M, M], 3, 2, [O, O, M, M]),
        (O, [M], 1, 2, [M]),
        # Only slow: degraded, then worse.
        (O, [D, D, D], 3, 2, [O, O, D]),
        (O, [D, D, D, M], 3, 2, [O, O, D, M]),
        (O, [D, M, D], 3, 2, [O, O, D]),
        # Recovery needs its own streak; a failure resets it.
        (M, [O], 3, 2, [M]),
        (M, [O, O], 3, 2, [M, O]),
        (M, [O, M, O, O], 3, 2, [M, M, M, O]),
        (M, [O], 3, 1, [O]),
        (D, [O, O], 3, 2, [D, O]),
        # A failing streak keeps the latest failing status.
        (M, [D, D, D], 3, 2, [M, M, D]),
        # After maintenance the streaks start over.
        (W, [O, O], 3, 2, [W, O]),
        (W, [M, M, M], 3, 2, [W, W, M]),
    ],
)
def test_thresholds(start, seen, failure, success, expected):
    assert run(start, seen, failure, success) == expected


def test_maintenance_shows_under_maintenance_and_restarts_the_streaks():
    assert run(O, [M, M, M, M, M], maintenance={1, 2, 3}) == [O, W, W, W, W]
    state = transition(State(O, failures=2), M, failure_threshold=3, success_threshold=2, in_maintenance=True)
    assert state == State(W, 0, 0)
