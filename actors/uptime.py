"""The uptime queue's work: HTTP checks of components, each for its slot, one message checking one
component (`check`) or the batch the scheduling loop sent (`checks`): `pulse.uptime.batch`; the
results that locations send back (`location_results`) and the final verdicts of slots checked
from locations (`verdicts`): `pulse.locations.verdict`; heartbeat monitors' pings and missed
deadlines (`heartbeat`): `pulse.heartbeats.apply`; and the RDAP lookups of domain expiry
warnings (`domain_expiry`): `pulse.uptime.domains`."""

from __future__ import annotations

import dramatiq

from pulse import events
from pulse import logging as pulse_logging
from pulse.heartbeats import apply as monitors
from pulse.locations import RESULTS_ACTOR, dispatch, verdict
from pulse.locations import gate as location_gate  # noqa: F401 - lets the results of locations in
from pulse.locations.wire import Result
from pulse.recurring.grid import parse_batch, parse_slot
from pulse.uptime import batch as checking
from pulse.uptime import domains


@dramatiq.actor(queue_name="uptime", time_limit=120_000, max_retries=2)
def check(component_id: int, scheduled_at: str) -> None:
    """Check one component for the slot ``scheduled_at`` (ISO 8601) and record the result."""
    events.publish(checking.check_all([(component_id, parse_slot(scheduled_at))], dispatch.send))


@dramatiq.actor(queue_name="uptime", time_limit=120_000, max_retries=2)
def checks(batch: list[list]) -> None:
    """Check each ``[component_id, scheduled_at]`` of ``batch`` at once and record the results.
    Its log lines carry the ``componentIds`` of the batch."""
    slots = parse_batch(batch, "component_id")
    pulse_logging.bind(componentIds=[component_id for component_id, _ in slots])
    events.publish(checking.check_all(slots, dispatch.send))


@dramatiq.actor(actor_name=RESULTS_ACTOR, queue_name="uptime", time_limit=60_000, max_retries=3)
def location_results(location: str, nonce: str, results: list) -> None:
    """Record what ``location`` found of each slot its batch ``nonce`` sent it and take the
    verdicts it decides. The message was rebuilt from what the location sent, its results
    validated (`pulse.locations.gate`)."""
    pulse_logging.bind(location=location)
    events.publish(verdict.record_results(location, nonce, [Result.of_json(r) for r in results]))


@dramatiq.actor(queue_name="uptime", time_limit=60_000, max_retries=3)
def verdicts(slots: list[list]) -> None:
    """Take the final verdict of each ``[component_id, scheduled_at]`` slot checked from
    locations whose time is up, with the votes that came."""
    events.publish(verdict.decide([(component_id, parse_slot(slot)) for component_id, slot in slots]))


@dramatiq.actor(queue_name="uptime", time_limit=60_000, max_retries=3)
def heartbeat(component_id: int, missed: str | None) -> None:
    """Apply a heartbeat monitor's waiting pings and its missed deadline ``missed`` (ISO 8601, or
    None) to its component's status: `pulse.heartbeats.apply`."""
    events.publish(monitors.apply(component_id, None if missed is None else parse_slot(missed)))


@dramatiq.actor(queue_name="uptime", time_limit=300_000, max_retries=0)
def domain_expiry() -> None:
    """Look up the expiry of the domains due a lookup (new, or a day old), a few at a time:
    `pulse.uptime.domains.refresh`. Not retried: the next tick comes in ten minutes."""
    domains.refresh()
