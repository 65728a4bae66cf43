"""Metrics scheduling: the claim-and-send loop (`pulse.recurring.loop`), run by a worker process consuming
`metrics`, sends each query's poll at its slot."""

from actors.metrics import poll
from pulse.metrics import due
from pulse.recurring import loop

POLLS = loop.declare(
    loop.Loop(
        name="metrics",
        claim=due.claim,
        next_due=due.next_due,
        message=lambda query_id, slot: poll.message(query_id, slot.isoformat()),
        prepare=due.start_new,
        bounded=True,
    )
)
