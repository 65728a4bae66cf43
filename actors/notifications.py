"""The notifications queue: events fanned out to the people and systems that asked for them."""

from __future__ import annotations

import logging

import dramatiq

from pulse.models import Event

logger = logging.getLogger(__name__)


@dramatiq.actor(queue_name="notifications", max_retries=3)
def broadcast(event_id: int) -> None:
    """Deliver one event to its organization's channels and subscribers.

    No channel or subscriber kinds exist yet, so an event reaches no one; it is logged.
    """
    event = Event.get_or_none(Event.id == event_id)
    if event is None:
        logger.warning("Event %s does not exist: nothing to broadcast.", event_id)
        return
    logger.info(
        "Event %s (%s) of organization %s: no channels configured.", event.id, event.type, event.organization_id
    )
