"""Metrics scheduling: the claim-and-send loop (`pulse.recurring.loop`), run by a worker process consuming
`metrics`, sends each query's poll at its slot, the polls due together in batches, one message each."""

from datetime import timedelta

from actors.metrics import poll, polls
from pulse.metrics import due
from pulse.recurring import loop

POLLS = loop.declare(
    loop.Loop(
        name="metrics",
        claim=due.claim,
        next_due=due.next_due,
        message=lambda query_id, slot: poll.message(query_id, slot.isoformat()),
        prepare=due.start_new,
        batch=lambda rows: polls.message([[query_id, slot.isoformat()] for query_id, slot in rows]),
        # A poll may start up to 200 ms after its slot, as a check may: batches four times the size.
        gather=timedelta(milliseconds=200),
        bounded=True,
    )
)
