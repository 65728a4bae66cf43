"""What a notification says: an event row turned into a `Notice`, before any channel formats it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pulse.components import status
from pulse.models.event import INCIDENT_OPENED, INCIDENT_RESOLVED, STATUS_CHANGED
from pulse.notifications.channels.notice import CRITICAL, INFO, RESOLVED, WARNING, Notice
from pulse.notifications.channels.text import status_name


def render(
    event_id: int, kind: str, payload: dict[str, Any], created_at: datetime, organization: str, url: str | None
) -> Notice:
    """The `Notice` for an event row (its type and payload as `pulse.components.changes` writes them)."""
    component = (payload.get("component") or {}).get("name")
    incident = payload.get("incident") or {}
    since = _time(payload.get("since")) or created_at
    if kind == STATUS_CHANGED:
        before, after = payload.get("from"), payload.get("to")
        return Notice(
            kind=kind,
            title=f"{component}: {status_name(after).lower()}",
            summary=f"{component} went from {status_name(before).lower()} to {status_name(after).lower()}. "
            f"{payload.get('reason') or ''}".strip(),
            organization=organization,
            since=since,
            severity=_severity(after),
            event_id=event_id,
            component=component,
            status=after,
            previous_status=before,
            url=url,
        )
    if kind in (INCIDENT_OPENED, INCIDENT_RESOLVED):
        opened = kind == INCIDENT_OPENED
        title = incident.get("title") or f"{component} incident"
        when = _time(incident.get("started_at" if opened else "resolved_at")) or since
        return Notice(
            kind=kind,
            title=f"Incident opened: {title}" if opened else f"Resolved: {title}",
            summary=(
                f"An incident was opened for {component}: {status_name(incident.get('impact')).lower()}."
                if opened
                else f"The incident on {component} is resolved."
            ),
            organization=organization,
            since=when,
            severity=CRITICAL if opened else RESOLVED,
            event_id=event_id,
            component=component,
            status=incident.get("impact") if opened else status.OPERATIONAL,
            url=url,
        )
    return Notice(
        kind=kind, title=kind, summary=str(payload.get("summary", "")), organization=organization, since=since,
        severity=INFO, event_id=event_id, component=component, url=url,
    )  # fmt: skip


def _severity(to: str | None) -> str:
    if to in status.OUTAGES:
        return CRITICAL
    if to == status.DEGRADED:
        return WARNING
    if to == status.OPERATIONAL:
        return RESOLVED
    return INFO


def _time(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None
