"""Which polls are due: metrics queries, not paused, each on its own grid of slots (`pulse.recurring.grid`),
claimed by the claim-and-send loop (`schedules/metrics.py`)."""

from __future__ import annotations

from pulse.recurring.grid import Grid

POLLS = Grid(table="metrics_query", column="next_poll_at", where="NOT paused")

claim, start_new, next_due = POLLS.claim, POLLS.start_new, POLLS.next_due
