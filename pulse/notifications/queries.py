"""What operators read of notifications: a channel by name, the latest deliveries."""

from __future__ import annotations

from typing import Any

from pulse.models import Event, Notification, NotificationChannel
from pulse.models.organization import find_by_key


def find_channel(name: str) -> NotificationChannel:
    """A channel by KEY, or ORGANIZATION/KEY; LookupError says what is wrong."""
    return find_by_key(NotificationChannel, name, "channel")


def recent(limit: int, status: str | None = None) -> list[dict[str, Any]]:
    """The latest deliveries, newest first."""
    query = (
        Notification.select(Notification, Event.id, Event.type)  # with Event.id, or peewee drops event_id
        .join(Event)
        .order_by(Notification.created_at.desc(), Notification.id.desc())
        .limit(limit)
    )
    if status:
        query = query.where(Notification.status == status)
    return [
        {
            "id": n.id,
            "created_at": n.created_at.isoformat(),
            "event_id": n.event_id,
            "event": n.event.type,
            "destination": n.destination,
            "status": n.status,
            "attempts": n.attempts,
            "last_error": n.last_error,
            "duration_ms": n.duration_ms,
            "sent_at": n.sent_at and n.sent_at.isoformat(),
        }
        for n in query
    ]
