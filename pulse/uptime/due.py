"""Which checks are due: components of type ENDPOINT, not paused, each on its own grid of slots
(`pulse.recurring.grid`), claimed by the claim-and-send loop (`schedules/uptime.py`)."""

from __future__ import annotations

from pulse.recurring.grid import Grid

CHECKS = Grid(
    table="component", column="next_check_at", where="type = 'ENDPOINT' AND NOT paused", since="checking_since"
)

claim, start_new, next_due = CHECKS.claim, CHECKS.start_new, CHECKS.next_due
