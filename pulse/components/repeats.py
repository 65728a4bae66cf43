"""Repeat notifications while down: a component with ``repeat_while_down`` (``repeat_seconds``)
tells its organization's channels again, every that long, that its incident is still open (an
event of type ``component.still_down``, on every channel whose events include it), at most
`MAX_REPEATS` times an incident.

The minute's tick (`schedules/outbox.py`) calls `due`. One statement moves each incident's count of
repeats to the number of whole periods since it opened, guarded by the count it read: a tick run
twice, or by two schedulers, repeats once; a tick that did not run for hours sends one repeat, not
one per period missed. A paused component repeats nothing.
"""

from __future__ import annotations

from datetime import datetime

from pulse import events
from pulse.db import db
from pulse.models.event import CHANNELS_ONLY, COMPONENT_STILL_DOWN

MAX_REPEATS = 48

DUE = """
UPDATE incident i
   SET repeats = least(%(max)s, floor(extract(epoch FROM %(now)s - i.started_at) / c.repeat_seconds))
  FROM component c
 WHERE c.id = i.component_id AND i.resolved_at IS NULL AND NOT c.paused
   AND c.repeat_seconds IS NOT NULL AND i.repeats < %(max)s
   AND i.started_at + make_interval(secs => c.repeat_seconds * (i.repeats + 1)) <= %(now)s
RETURNING i.id, i.organization_id, i.component_id, i.repeats, i.title, i.impact, i.started_at, c.key, c.name
"""


def due(now: datetime) -> list[int]:
    """Write the repeat of every open incident due one at ``now``, in one transaction. Returns the
    events' ids, to publish after the commit."""
    written = []
    with db.atomic():
        rows = db.execute_sql(DUE, {"now": now, "max": MAX_REPEATS}).fetchall()
        for incident_id, organization_id, component_id, repeat, title, impact, started_at, key, name in rows:
            payload = {
                "incident": {"id": incident_id, "title": title, "impact": impact, "started_at": started_at.isoformat()},
                "component": {"key": key, "name": name},
                "repeat": repeat,
                "since": started_at.isoformat(),
            }
            links = {"component_id": component_id, "incident_id": incident_id}
            written.append(events.emit(COMPONENT_STILL_DOWN, organization_id, payload, audience=CHANNELS_ONLY, **links))
    return written
