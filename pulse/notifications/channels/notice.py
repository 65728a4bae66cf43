"""What a notification says, before any channel formats it."""

from __future__ import annotations

import dataclasses
from datetime import datetime

# Severities decide colors and urgency on every channel.
CRITICAL, WARNING, RESOLVED, INFO = "critical", "warning", "resolved", "info"


@dataclasses.dataclass(frozen=True)
class Notice:
    """One event, in words. Every channel's pure ``payload`` builder takes one.

    Parameters:
      kind: the event type: ``component.status_changed``, ``incident.opened``,
        ``incident.resolved`` or ``test``.
      title: the headline, e.g. "Public API: major outage" (plain text, may be long).
      summary: one or two plain sentences: what happened and why.
      organization: the organization's name.
      component: the component's name, if the event is about one.
      status: the component's status now (OPERATIONAL, DEGRADED_PERFORMANCE, PARTIAL_OUTAGE,
        MAJOR_OUTAGE, UNDER_MAINTENANCE), if known.
      previous_status: its status before, if the event is a change.
      since: when it happened (timezone-aware, UTC).
      severity: `CRITICAL`, `WARNING`, `RESOLVED` or `INFO`.
      url: a link to read more (the status page or the incident), if configured.
      event_id: the event's id.
    """

    kind: str
    title: str
    summary: str
    organization: str
    since: datetime
    severity: str
    event_id: int
    component: str | None = None
    status: str | None = None
    previous_status: str | None = None
    url: str | None = None
