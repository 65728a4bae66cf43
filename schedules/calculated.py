"""Calculated-metrics scheduling: the claim-and-send loop (`pulse.recurring.loop`), run by a worker process
consuming `calculated-metrics`, sends each marked metric's evaluation when it comes due
(`pulse.calculated.due`), the evaluations due together in batches, one message each."""

from actors.calculated import recalculate, recalculate_all
from pulse.calculated import due
from pulse.recurring import loop

EVALUATIONS = loop.declare(
    loop.Loop(
        name="calculated-metrics",
        claim=due.claim,
        next_due=due.next_due,
        message=lambda metric_id, due_at: recalculate.message(metric_id, due_at.isoformat()),
        batch=lambda rows: recalculate_all.message([[metric_id, due_at.isoformat()] for metric_id, due_at in rows]),
        ahead=False,
    )
)
