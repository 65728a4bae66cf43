"""The verdict of a slot checked from several locations, from what each of them saw. Pure.

A component checked from n locations with quorum k (a majority, ``n // 2 + 1``, unless it sets
one) is failing for a slot when at least k locations saw it failing, and up when at least k saw it
up. A location that abstained (it could not reach its canaries: its own network is down) or that
did not answer within the slot's time does not vote. When neither side has k votes, the slot
has no verdict: the status stays as it is. With a quorum below a majority both sides may have k
votes: failing wins.

The verdict is taken as soon as it cannot change (k locations failing; or k up, with too few
locations left to make it failing), else when the slot's time is up (``final``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pulse.components.status import DEGRADED, MAJOR_OUTAGE, OPERATIONAL


@dataclasses.dataclass(frozen=True)
class Vote:
    """What one location saw of a slot.

    Parameters:
      location: its name.
      seen: the status its check observed (OPERATIONAL, DEGRADED_PERFORMANCE or MAJOR_OUTAGE).
      abstained: its canaries failed: its check says nothing of the component.
    """

    location: str
    seen: str
    abstained: bool = False


def needed(locations: int, quorum: int | None) -> int:
    """The votes a verdict needs: ``quorum``, or a majority of the ``locations`` listed."""
    return quorum if quorum is not None else locations // 2 + 1


def verdict(votes: Sequence[Vote], locations: int, quorum: int | None, *, final: bool) -> str | None:
    """The status the slot's votes decide, or None: undecided yet (``final`` False: more votes may
    come) or no verdict (``final``: the slot's time is up).

    MAJOR_OUTAGE when k locations saw a major outage; DEGRADED_PERFORMANCE when k saw it failing
    but not k a major outage; OPERATIONAL when k saw it up and it cannot be failing.

    Parameters:
      votes: one per location that answered (abstentions included).
      locations: how many locations the component lists.
      quorum: its quorum, or None for a majority.
      final: no more votes will come.
    """
    k = needed(locations, quorum)
    counted = [v.seen for v in votes if not v.abstained]
    waiting = 0 if final else max(locations - len(votes), 0)
    major = counted.count(MAJOR_OUTAGE)
    failing = len(counted) - counted.count(OPERATIONAL)
    up = counted.count(OPERATIONAL)
    if major >= k:
        return MAJOR_OUTAGE
    if failing >= k and major + waiting < k:
        return DEGRADED
    if up >= k and failing + waiting < k:
        return OPERATIONAL
    return None
