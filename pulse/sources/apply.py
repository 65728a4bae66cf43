"""What a source's events do to its on-call alerts, applied by a worker in the order they arrived,
in one transaction that holds the source's lock (two messages for one source take turns; each
event is marked applied in the same transaction, so a redelivered message applies nothing twice):

- a trigger of a key with no open alert opens one, routed to the escalation policy of the source's
  first route whose labels match, and pages its level 1; a trigger of a key whose alert is open adds
  to it (its timeline says what changed, and nothing when nothing did: Alertmanager's retries and
  repeats) and pages no one;
- an acknowledge or resolve of a key with an open alert acknowledges or resolves it (as a person
  would, through `pulse.oncall.alerts`); of a key with none, it is dropped and says so.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from pulse.config import Settings
from pulse.db import db
from pulse.models import AlertEvent, AlertSource, OnCallAlert
from pulse.models.alert import RESOLVED
from pulse.models.alert_source import ACKNOWLEDGE, TRIGGER
from pulse.oncall import alerts
from pulse.oncall.alerts import Outcome

logger = logging.getLogger(__name__)

WAITING = """
UPDATE alert_event SET applied = true WHERE source_id = %s AND NOT applied
RETURNING id, received_at, action, dedup_key, summary, severity, labels, details
"""
_FIELDS = ("id", "received_at", "action", "dedup_key", "summary", "severity", "labels", "details")  # of WAITING
PREVIOUS = """
SELECT summary, severity, labels, details FROM alert_event
WHERE source_id = %s AND dedup_key = %s AND applied AND id < %s
ORDER BY id DESC LIMIT 1
"""


def apply(source_id: int, now: datetime, settings: Settings | None = None) -> Outcome:
    """Apply the source's waiting events. Returns the pages and events to send after the commit."""
    notifications: list[int] = []
    events: list[int] = []
    with db.atomic():
        source = AlertSource.select().where(AlertSource.id == source_id).for_update("FOR NO KEY UPDATE").first()  # type: ignore[arg-type]
        if source is None:
            return Outcome()
        for row in sorted(db.execute_sql(WAITING, (source_id,)).fetchall()):
            event = AlertEvent(source=source_id, **dict(zip(_FIELDS, row, strict=True)))
            outcome = _apply(source, event, now, settings)
            notifications += outcome.notifications
            events += outcome.events
    return Outcome(notifications=notifications, events=events)


def _apply(source: AlertSource, event: AlertEvent, now: datetime, settings: Settings | None) -> Outcome:
    alert = OnCallAlert.get_or_none(
        OnCallAlert.source == source.id, OnCallAlert.dedup_key == event.dedup_key, OnCallAlert.status != RESOLVED
    )
    if event.action == TRIGGER:
        return _trigger(source, event, alert, now, settings)
    if alert is None:
        logger.info("%s: %s of %r, which has no open alert: dropped.", source.name, event.action, event.dedup_key)
        return Outcome()
    if event.action == ACKNOWLEDGE:
        _, said = alerts.acknowledge(alert.id, None, source.kind, now)
    else:
        _, said = alerts.resolve(alert.id, f"{source.name} resolved it", now)
    logger.info("%s: %s.", source.name, said)
    return Outcome()


def _trigger(
    source: AlertSource, event: AlertEvent, alert: OnCallAlert | None, now: datetime, settings: Settings | None
) -> Outcome:
    if alert is not None:
        previous = db.execute_sql(PREVIOUS, (source.id, event.dedup_key, event.id)).fetchone()
        if previous != (event.summary, event.severity, event.labels, event.details):
            alerts.note(alert.id, now, "updated", f"{source.name} sent it again: {event.summary}")
        return Outcome()
    policy_key = route(source.routes, event.labels)
    policy = policy_key and alerts.frozen_policy(source.organization_id, policy_key)
    if not policy:
        logger.warning(
            "%s: no escalation policy %r for %r: the alert is not paged (check the source's routes).",
            source.name, policy_key, event.dedup_key,
        )  # fmt: skip
        return Outcome()
    payload = {
        "summary": event.summary,
        "severity": event.severity,
        "started_at": event.received_at.isoformat(),
        "dedup_key": event.dedup_key,
        "labels": event.labels,
    }
    return alerts.open_keyed(source, event.dedup_key, event.summary, payload, policy, now, settings)


def route(routes: list[dict[str, Any]], labels: dict[str, str]) -> str | None:
    """The escalation policy of the first route whose ``match`` labels ``labels`` all have, or None."""
    for candidate in routes:
        if all(labels.get(name) == value for name, value in candidate["match"].items()):
            return str(candidate["policy"])
    return None
