"""Uptime scheduling: the claim-and-send loops (`pulse.recurring.loop`) run by a worker process
consuming `uptime`. One sends each component's check at its slot (sub-minute intervals included),
the checks due together in one message; the other sends each heartbeat monitor whose pings wait to
be applied or whose deadline passed (`pulse.heartbeats.due`); a third sends the slots checked from
locations whose time is up for their final verdict (`pulse.locations.verdict`). Every ten minutes a tick sends the
RDAP lookups of domain expiry warnings (`pulse.uptime.domains`); every minute one records the slots
nobody checked as unknown (`pulse.uptime.missed`), and skips a minute the database is away (the next
goes on from where the last got)."""

from datetime import timedelta

from actors.uptime import check, checks, domain_expiry, heartbeat, verdicts
from pulse.heartbeats import due as monitors
from pulse.locations import verdict
from pulse.recurring import loop
from pulse.recurring.ticks import tick
from pulse.uptime import due, missed

UPTIME = loop.declare(
    loop.Loop(
        name="uptime",
        claim=due.claim,
        next_due=due.next_due,
        message=lambda component_id, slot: check.message(component_id, slot.isoformat()),
        prepare=due.start_new,
        batch=lambda rows: checks.message([[component_id, slot.isoformat()] for component_id, slot in rows]),
        # The checks due within 500 ms travel together, up to 64 a message (the bigger the
        # batch, the less CPU a check: docs/performance.md), leaving 200 ms before the first is
        # due, and the worker starts each at its own slot (`pulse.uptime.batch.run_all`).
        gather=timedelta(milliseconds=500),
        lead=timedelta(milliseconds=700),
        batch_max=64,
        bounded=True,
    )
)

HEARTBEAT_MONITORS = loop.declare(
    loop.Loop(
        name="heartbeat-monitors",
        queue="uptime",
        claim=monitors.claim,
        next_due=monitors.next_due,
        message=lambda key, due_at: heartbeat.message(key[0], key[1] and key[1].isoformat()),
        ahead=False,  # a deadline is missed once it has passed
    )
)


VERDICTS = loop.declare(
    loop.Loop(
        name="verdicts",
        queue="uptime",
        claim=verdict.claim,
        next_due=verdict.next_due,
        message=lambda key, due_at: verdicts.message([[key[0], key[1].isoformat()]]),
        batch=lambda rows: verdicts.message([[key[0], key[1].isoformat()] for key, _ in rows]),
        ahead=False,  # a slot's time is up once it has passed
    )
)


@tick("uptime", "*/10 * * * *")
def domain_expiry_tick() -> None:
    domain_expiry.send()


@tick("uptime", "* * * * *", time_limit_ms=120_000)  # a sweep stops taking chunks after `missed.BUDGET_S`
def missed_slots_tick() -> None:
    missed.sweep()
