import pytest

from pulse.components.status import DEGRADED, MAJOR_OUTAGE, OPERATIONAL
from pulse.locations.quorum import Vote, needed, verdict

UP, SLOW, DOWN = OPERATIONAL, DEGRADED, MAJOR_OUTAGE


def votes(*seen: str, abstaining: int = 0) -> list[Vote]:
    cast = [Vote(f"l{i}", s) for i, s in enumerate(seen)]
    return cast + [Vote(f"a{i}", DOWN, abstained=True) for i in range(abstaining)]


@pytest.mark.parametrize(
    ("locations", "quorum", "expected"),
    [(1, None, 1), (2, None, 2), (3, None, 2), (4, None, 3), (5, None, 3), (5, 1, 1)],
)
def test_the_quorum_is_a_majority_unless_set(locations, quorum, expected):
    assert needed(locations, quorum) == expected


@pytest.mark.parametrize(
    ("cast", "locations", "quorum", "final", "expected"),
    [
        # three locations, a majority of two
        (votes(UP), 3, None, False, None),  # one vote: wait
        (votes(UP, UP), 3, None, False, UP),  # two up: the third cannot make it failing
        (votes(DOWN, DOWN), 3, None, False, DOWN),
        (votes(UP, DOWN), 3, None, False, None),  # the third decides
        (votes(UP, DOWN, UP), 3, None, False, UP),  # one location's link is cut: no change
        (votes(UP, DOWN, DOWN), 3, None, False, DOWN),  # two: down
        (votes(UP, DOWN), 3, None, True, None),  # the third never answered: no verdict
        (votes(UP), 3, None, True, None),
        ([], 3, None, True, None),  # every location silent
        (votes(UP, UP, abstaining=1), 3, None, False, UP),
        (votes(UP, abstaining=2), 3, None, True, None),  # an abstention is no vote
        (votes(DOWN, abstaining=1), 3, None, False, None),
        (votes(DOWN, abstaining=1), 3, None, True, None),
        # a slow answer fails a condition without an outage
        (votes(SLOW, SLOW, UP), 3, None, False, SLOW),
        (votes(SLOW, DOWN), 3, None, False, None),  # degraded or down: the third decides which
        (votes(SLOW, DOWN, UP), 3, None, False, SLOW),
        (votes(SLOW, DOWN, DOWN), 3, None, False, DOWN),
        # a quorum of one: any location failing is enough, and failing wins a tie
        (votes(DOWN), 3, 1, False, DOWN),
        (votes(UP), 3, 1, False, None),
        (votes(UP, UP, DOWN), 3, 1, False, DOWN),
        (votes(UP, UP, UP), 3, 1, False, UP),
        # all must agree
        (votes(DOWN, DOWN), 3, 3, False, None),
        (votes(DOWN, DOWN), 3, 3, True, None),
        (votes(DOWN, DOWN, DOWN), 3, 3, False, DOWN),
        (votes(UP, DOWN, DOWN), 3, 3, False, None),
        # one location: today's behaviour
        (votes(DOWN), 1, None, False, DOWN),
        (votes(UP), 1, None, False, UP),
    ],
)
def test_the_verdict(cast, locations, quorum, final, expected):
    assert verdict(cast, locations, quorum, final=final) == expected
