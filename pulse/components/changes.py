"""A change of a component's status, applied once: its counters and status, the incident it opens
or resolves, and the events that tell people, all in the caller's transaction.

Uptime checks call it today; metric thresholds and calculated metrics will call the same, so a
component changes status, opens incidents and notifies the same way whatever observed it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pulse import events
from pulse.components import incidents
from pulse.components.snapshot import COLUMNS, Snapshot
from pulse.components.status import MAINTENANCE, OPERATIONAL, OUTAGES
from pulse.db import db
from pulse.models import Component, utcnow
from pulse.models.event import INCIDENT_OPENED, INCIDENT_RESOLVED, STATUS_CHANGED

LOCK = f"SELECT {COLUMNS} FROM component c WHERE c.id = %(id)s FOR NO KEY UPDATE OF c"


def lock(component_id: int, *, failure_threshold: int, success_threshold: int) -> Snapshot | None:
    """The component, its row locked until commit, judged by the thresholds of what observes it
    (a metric's, say); None if it was deleted."""
    row = db.execute_sql(LOCK, {"id": component_id, "now": utcnow()}).fetchone()
    if row is None:
        return None
    return Snapshot.of(row, failure_threshold=failure_threshold, success_threshold=success_threshold)


def apply(component: Snapshot, seen: str, reason: str, now: datetime, **fields: Any) -> list[int]:
    """Apply one observation of ``seen`` to the locked ``component``; ``fields`` are more columns
    of the component to set. Returns the ids of the events written, to publish after commit.

    A change into an outage opens the component's incident (with ``auto_incident``), the return
    to OPERATIONAL resolves it; maintenance changes the status silently.
    """
    before, after = component.state, component.after(seen)
    changed = after.status != before.status
    fields.update(status=after.status, consecutive_failures=after.failures, consecutive_successes=after.successes)
    if changed:
        fields["status_since"] = now
    Component.update(**fields).where(Component.id == component.id).execute()
    if not changed or after.status == MAINTENANCE:
        return []

    about = {"id": component.id, "key": component.key, "name": component.name}
    change = {"component": about, "from": before.status, "to": after.status, "since": now.isoformat(), "reason": reason}
    event_ids = [events.emit(STATUS_CHANGED, component.organization_id, change, component_id=component.id)]
    if component.auto_incident and after.status in OUTAGES and before.status not in OUTAGES:
        opened = incidents.open_automatic(component, after.status, reason, now)
        if opened:
            event_ids.append(incidents.event(INCIDENT_OPENED, opened, about))
    if after.status == OPERATIONAL:
        resolved = incidents.resolve_automatic(component, f"{component.name} is operational again.", now)
        if resolved:
            event_ids.append(incidents.event(INCIDENT_RESOLVED, resolved, about))
    return event_ids
