"""Incidents: opened and resolved automatically with their component's status, or by hand (the
API) with a stage and a message, then updated stage by stage until resolved. Each change writes its
event (`event`) in the caller's transaction: ``incident.opened``, ``incident.updated`` and
``incident.resolved``, which tell the channels and subscribers and, for an incident of a component
with an escalation policy, open and resolve its on-call alert (`pulse.events`).

An incident opened by hand is resolved by hand: its component's recovery leaves it open (the
people who opened it say when it is over), and while it is open the component opens no automatic
incident of its own (one open incident per component).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pulse import events
from pulse.components.snapshot import Snapshot
from pulse.models import Component, Incident, IncidentUpdate
from pulse.models.event import INCIDENT_OPENED, INCIDENT_RESOLVED, INCIDENT_UPDATED
from pulse.models.incident import INVESTIGATING, RESOLVED


def open_automatic(component: Snapshot, impact: str, reason: str, now: datetime) -> Incident | None:
    """Open the component's incident, unless one is open already (a partial unique index says
    at most one). Returns the new incident, or None."""
    title = f"{component.name} is down"
    return _open(component.organization_id, component.id, title, impact, INVESTIGATING, reason, now, automatic=True)


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


def open_by_hand(
    organization_id: int, component: Component | None, title: str, impact: str, stage: str, message: str, now: datetime
) -> Incident | None:
    """Open an incident (of ``component``, or of none) at ``stage`` with its first update, and
    its event. None, writing nothing, when the component has an incident open already."""
    component_id = component.id if component is not None else None
    incident = _open(organization_id, component_id, title, impact, stage, message, now, automatic=False)
    if incident is not None:
        event(INCIDENT_OPENED, incident, _about(component), message)
    return incident


def post_update(incident: Incident, stage: str, message: str, now: datetime) -> Incident:
    """Add an update to the open ``incident`` (its row locked by the caller), moving it to ``stage``:
    RESOLVED resolves it. Writes its event; returns the incident as it is now."""
    fields: dict[str, Any] = {"status": stage}
    if stage == RESOLVED:
        fields["resolved_at"] = now
    Incident.update(**fields).where(Incident.id == incident.id).execute()
    IncidentUpdate.create(incident=incident.id, status=stage, message=message, created_at=now)
    changed = Incident.get_by_id(incident.id)
    component = Component.get_or_none(Component.id == incident.component_id) if incident.component_id else None
    event(INCIDENT_RESOLVED if stage == RESOLVED else INCIDENT_UPDATED, changed, _about(component), message)
    return changed


def event(kind: str, incident: Incident, component: dict[str, Any] | None, message: str | None = None) -> int:
    """Write the event of ``kind`` about ``incident`` (of ``component``: its id, key and name), with
    the ``message`` of the update that made it, if people wrote one."""
    payload: dict[str, Any] = {
        "component": component,
        "incident": {
            "id": incident.id,
            "title": incident.title,
            "status": incident.status,
            "impact": incident.impact,
            "started_at": incident.started_at.isoformat(),
            "resolved_at": incident.resolved_at and incident.resolved_at.isoformat(),
        },
    }
    if message is not None:
        payload["message"] = message
    component_id = component["id"] if component else None
    return events.emit(kind, incident.organization_id, payload, component_id=component_id, incident_id=incident.id)


def _open(
    organization_id: int,
    component_id: int | None,
    title: str,
    impact: str,
    stage: str,
    message: str,
    now: datetime,
    *,
    automatic: bool,
) -> Incident | None:
    """Insert an incident with its first update; None, writing nothing, when its component has one
    open already."""
    incident_id = (
        Incident.insert(
            organization=organization_id,
            component=component_id,
            title=title,
            status=stage,
            impact=impact,
            automatic=automatic,
            started_at=now,
        )
        .on_conflict_ignore()
        .execute()
    )
    if incident_id is None:
        return None
    IncidentUpdate.create(incident=incident_id, status=stage, message=message, created_at=now)
    return Incident.get_by_id(incident_id)


def _about(component: Component | None) -> dict[str, Any] | None:
    return None if component is None else {"id": component.id, "key": component.key, "name": component.name}
