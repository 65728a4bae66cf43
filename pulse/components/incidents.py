"""Incidents opened and resolved automatically with their component's status."""

from __future__ import annotations

from datetime import datetime

from pulse.components.snapshot import Snapshot
from pulse.models import Incident, IncidentUpdate
from pulse.models.incident import INVESTIGATING, RESOLVED


def open_automatic(component: Snapshot, impact: str, reason: str, now: datetime) -> Incident | None:
    """Open the component's incident, unless one is open already (a partial unique index says
    at most one). Returns the new incident, or None."""
    incident_id = (
        Incident.insert(
            organization=component.organization_id,
            component=component.id,
            title=f"{component.name} is down",
            status=INVESTIGATING,
            impact=impact,
            automatic=True,
            started_at=now,
        )
        .on_conflict_ignore()
        .execute()
    )
    if incident_id is None:
        return None
    IncidentUpdate.create(incident=incident_id, status=INVESTIGATING, message=reason, created_at=now)
    return Incident.get_by_id(incident_id)


def resolve_automatic(component: Snapshot, reason: str, now: datetime) -> Incident | None:
    """Resolve the component's open automatic incident, if any. Returns it, or None."""
    resolved = list(
        Incident.update(status=RESOLVED, resolved_at=now)
        .where(Incident.component == component.id, Incident.resolved_at.is_null(), Incident.automatic)
        .returning(Incident)
        .execute()
    )
    if not resolved:
        return None
    IncidentUpdate.create(incident=resolved[0].id, status=RESOLVED, message=reason, created_at=now)
    return resolved[0]
