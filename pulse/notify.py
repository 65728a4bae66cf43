"""What the CLI does with notifications: send a test through a channel, list recent deliveries."""

from __future__ import annotations

import time
import uuid
from typing import Any

from pulse.channels import TRANSPORTS, Destination, Sent
from pulse.channels.notice import INFO, Notice
from pulse.config import Settings
from pulse.http import AddressPolicy
from pulse.models import Event, Notification, NotificationChannel, utcnow
from pulse.models.organization import find_by_key


def find_channel(name: str) -> NotificationChannel:
    """A channel by KEY, or ORGANIZATION/KEY; LookupError says what is wrong."""
    return find_by_key(NotificationChannel, name, "channel")


def send_test(channel: NotificationChannel, settings: Settings) -> tuple[Sent, float]:
    """Send a test message through ``channel`` now; the provider's answer and the milliseconds
    taken. Raises `TransportError` with the provider's reason."""
    notice = Notice(
        kind="test",
        title="Test notification from Pulse",
        summary=f"If you can read this, the {channel.type} channel {channel.key!r} works.",
        organization=channel.organization.name,
        since=utcnow(),
        severity=INFO,
        event_id=0,
        url=settings.public_url or None,
    )
    destination = Destination(channel.type, channel.settings, f"pulse-test-{uuid.uuid4()}", f"c{channel.id}")
    started = time.perf_counter()
    sent = TRANSPORTS[channel.type](notice, destination, settings, AddressPolicy.from_settings(settings))
    return sent, (time.perf_counter() - started) * 1000


def recent(limit: int, status: str | None = None) -> list[dict[str, Any]]:
    """The latest deliveries, newest first."""
    query = (
        Notification.select(Notification, Event.type)
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
