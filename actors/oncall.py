"""The on-call queue's work: an incident's alert opened and level 1 paged, an escalation to the
next level, an acknowledgement from the web application, an alert resolved with its incident, and
the events an alert source sent in applied to its alerts.
Pages are notifications, delivered by the notifications queue's `send`."""

from __future__ import annotations

import logging

import dramatiq

from actors.notifications import send
from pulse import events
from pulse.config import get_settings
from pulse.errors import PermanentError
from pulse.models import utcnow
from pulse.oncall import alerts
from pulse.rabbitmq import PRIORITY_URGENT
from pulse.rabbitmq.publish import send_all
from pulse.sources import apply as sources

logger = logging.getLogger(__name__)

# A page waits out a database outage: 8 retries back off 1 s to 256 s (about 8 minutes in all).
RETRIES = 8


@dramatiq.actor(queue_name="oncall", time_limit=30_000, max_retries=RETRIES)
def alert(incident_id: int) -> None:
    """Open the incident's on-call alert and page level 1, once (see `pulse.oncall.alerts`)."""
    outcome = alerts.open_alert(incident_id, utcnow(), get_settings())
    _send(outcome)
    if outcome.notifications:
        logger.info("Incident %s: %d page(s) sent.", incident_id, len(outcome.notifications))


@dramatiq.actor(queue_name="oncall", time_limit=30_000, max_retries=RETRIES)
def escalations(batch: list[list[int]]) -> None:
    """Page the next level of each ``[alert_id, expected_level, expected_round]`` of ``batch`` still
    unacknowledged there, in one transaction: sent by the loop for the alerts whose waits end
    together."""
    if not isinstance(batch, list) or not all(
        isinstance(key, list) and len(key) == 3 and all(isinstance(n, int) for n in key) for key in batch
    ):
        raise PermanentError("batch is not a list of [alert_id, expected_level, expected_round]")
    outcome = alerts.escalate_all([(a, level, round_) for a, level, round_ in batch], utcnow(), get_settings())
    _send(outcome)
    if outcome.notifications:
        logger.info("%d alert(s) escalated: %d page(s) sent.", len(batch), len(outcome.notifications))


@dramatiq.actor(queue_name="oncall", time_limit=30_000, max_retries=RETRIES)
def escalate(alert_id: int, expected_level: int, expected_round: int) -> None:
    """Page the next level if the alert is still unacknowledged at ``expected_level`` of
    ``expected_round``: what the loop sent before it sent `escalations` (kept for the messages of
    an older version still in the queue)."""
    outcome = alerts.escalate(alert_id, expected_level, expected_round, utcnow(), get_settings())
    _send(outcome)
    if outcome.notifications:
        logger.info("Alert %s escalated: %d page(s) sent.", alert_id, len(outcome.notifications))


@dramatiq.actor(queue_name="oncall", time_limit=30_000, max_retries=RETRIES)
def acknowledge(alert_id: int, person_key: str | None = None) -> None:
    """Acknowledge an alert for a person (their key), as the web application asks."""
    try:
        _, said = alerts.acknowledge(alert_id, person_key, "web", utcnow())
    except LookupError as e:
        raise PermanentError(str(e.args[0])) from None
    logger.info("%s.", said[0].upper() + said[1:])


@dramatiq.actor(queue_name="oncall", time_limit=30_000, max_retries=RETRIES)
def resolve(incident_id: int) -> None:
    """Resolve the alert of a resolved incident, stopping its escalation."""
    alerts.resolve_incident(incident_id, utcnow())


@dramatiq.actor(queue_name="oncall", time_limit=30_000, max_retries=RETRIES)
def alert_events(source_id: int) -> None:
    """Apply the events an alert source sent, in order (`pulse.sources.apply`): sent by the loop
    once they are recorded."""
    outcome = sources.apply(source_id, utcnow(), get_settings())
    _send(outcome)
    if outcome.notifications:
        logger.info("Alert source %s: %d page(s) sent.", source_id, len(outcome.notifications))


def _send(outcome: alerts.Outcome) -> None:
    send_all([send.message_with_options(args=(i,), broker_priority=PRIORITY_URGENT) for i in outcome.notifications])
    events.publish(outcome.events)
