"""Acknowledgement reminders, as Grafana OnCall has them: an escalation policy with
``ack_reminder`` (frozen with each alert as ``ack_reminder_seconds``) reminds the person who
acknowledged an alert, every that long, that it is still not resolved, on the policy's contact
channels they have an address for, at most `MAX_REMINDERS` times. An alert acknowledged by an
operator or by its source (no person) reminds no one.

The minute's tick (`schedules/oncall.py`) calls `due`. One statement moves each alert's count of
reminders to the number of whole periods since its acknowledgement, guarded by the count it read:
a tick run twice, or by two schedulers, reminds once; a tick that did not run for hours sends one
reminder, not one per period missed. Each reminder is an event of its own (``oncall.reminder``,
addressed: never broadcast) whose notifications are created once.
"""

from __future__ import annotations

from datetime import datetime

from pulse.db import db
from pulse.models import Event, Notification, OnCallTimeline, Person
from pulse.models.event import ADDRESSED, ONCALL_REMINDER
from pulse.models.oncall import CONTACTS

MAX_REMINDERS = 24

DUE = """
WITH due AS (
    SELECT id, floor(extract(epoch FROM %(now)s - acknowledged_at) / (policy->>'ack_reminder_seconds')::int) AS n
      FROM oncall_alert
     WHERE status = 'acknowledged' AND acknowledged_by IS NOT NULL AND reminders < %(max)s
       AND (policy->>'ack_reminder_seconds')::int > 0
       AND acknowledged_at + make_interval(secs => (policy->>'ack_reminder_seconds')::int * (reminders + 1)) <= %(now)s
       FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE oncall_alert a SET reminders = least(%(max)s, due.n), updated_at = %(now)s
  FROM due
 WHERE a.id = due.id
RETURNING a.id, a.organization_id, a.component_id, a.incident_id, a.event_id, a.reminders, a.acknowledged_by,
          a.acknowledged_at, a.policy->'contact'
"""


def due(now: datetime) -> list[int]:
    """Write the reminders due at ``now``, in one transaction. Returns the ids of their
    notifications, to send after the commit."""
    sent: list[int] = []
    with db.atomic():
        for alert_id, organization_id, component_id, incident_id, page_id, n, by, at, contact in db.execute_sql(
            DUE, {"now": now, "max": MAX_REMINDERS}
        ).fetchall():
            person = Person.get_or_none(Person.organization == organization_id, Person.key == by)
            channels = [c for c in contact if person is not None and getattr(person, CONTACTS[c])]
            if person is None or not channels:
                note = f"{by} could not be reminded: no longer one of the organization's people or no address"
                OnCallTimeline.insert(alert=alert_id, at=now, kind="reminded", person=by, note=note).execute()
                continue
            payload = {**Event.get_by_id(page_id).payload, "reminder": n, "acknowledged_at": at.isoformat()}
            event_id = Event.insert(
                organization=organization_id, component=component_id, incident=incident_id, type=ONCALL_REMINDER,
                payload=payload, audience=ADDRESSED, created_at=now, sent_at=now,
            ).execute()  # fmt: skip
            rows = [
                {"event": event_id, "organization": organization_id, "person": person.id, "key": f"{person.id}.{c}",
                 "kind": c, "destination": f"{c} reminder to {by}"}
                for c in channels
            ]  # fmt: skip
            sent += [row.id for row in Notification.insert_many(rows).returning(Notification.id).execute()]
            note = f"reminder {n} to {person.name} by {', '.join(channels)}: acknowledged, still not resolved"
            OnCallTimeline.insert(alert=alert_id, at=now, kind="reminded", person=by, note=note).execute()
    return sent
