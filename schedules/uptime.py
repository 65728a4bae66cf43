"""Uptime scheduling: the claim-and-send loop (`pulse.recurring.loop`), run by a worker process consuming
`uptime`, sends each component's check at its slot (sub-minute intervals included), the checks due
together in one message."""

from datetime import timedelta

from actors.uptime import check, checks
from pulse.recurring import loop
from pulse.uptime import due

UPTIME = loop.declare(
    loop.Loop(
        name="uptime",
        claim=due.claim,
        next_due=due.next_due,
        message=lambda component_id, slot: check.message(component_id, slot.isoformat()),
        prepare=due.start_new,
        batch=lambda rows: checks.message([[component_id, slot.isoformat()] for component_id, slot in rows]),
        # A check may start up to 200 ms after its slot: batches twice the size, for about a
        # quarter less CPU per check (docs/performance.md).
        gather=timedelta(milliseconds=200),
        bounded=True,
    )
)
