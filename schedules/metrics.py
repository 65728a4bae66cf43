"""Metrics scheduling: the claim-and-send loop (`pulse.loop`), run by a worker process consuming
`metrics`, sends each query's poll at its slot."""

from actors.metrics import poll
from pulse import loop
from pulse.metrics import due

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
