"""On-call schedules as they are stored (`pulse.models.OnCallSchedule`: layers and overrides in the
configuration file's text forms, by person key), read into the `pulse.oncall.rotation.Schedule`
that says who is on call; and the schedules an operator names on the command line.

A stored layer is ``{"rotation": "daily" | "weekly" | "every", "every": "12h" (for "every" only),
"handoff": "monday 09:00", "start": "2026-01-05", "members": [keys], "restrict": ["mon-fri
09:00-17:00", ...]}``; an override is ``{"person": key, "from": ISO 8601 with offset, "until": ...}``.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from pulse.models import OnCallSchedule, Organization, Person, utcnow
from pulse.oncall import rotation
from pulse.oncall.rotation import shifts

HORIZON = timedelta(days=35)  # beyond the longest rotation (28 days): how far `who` looks for a shift's ends


def schedule(
    key: str, time_zone: str, layers: list[dict[str, Any]], overrides: list[dict[str, Any]]
) -> rotation.Schedule:
    """The `rotation.Schedule` of stored (or validated) layers and overrides. Raises ValueError
    when a text form does not parse (the configuration file's validation has refused it before)."""
    return rotation.Schedule(
        key=key,
        time_zone=rotation.parse_time_zone(time_zone),
        layers=tuple(_layer(layer) for layer in layers),
        overrides=tuple(
            rotation.Override(o["person"], datetime.fromisoformat(o["from"]), datetime.fromisoformat(o["until"]))
            for o in overrides
        ),
    )


def _layer(layer: dict[str, Any]) -> rotation.Layer:
    kind = layer["rotation"]
    return rotation.Layer(
        rotation=rotation.parse_every(layer["every"]) if kind == "every" else kind,
        handoff=rotation.parse_handoff(layer["handoff"]),
        start=date.fromisoformat(layer["start"]),
        members=tuple(layer["members"]),
        restrict=tuple(rotation.parse_window(text) for text in layer.get("restrict", ())),
    )


def of(row: OnCallSchedule) -> rotation.Schedule:
    """The `rotation.Schedule` of a stored schedule."""
    return schedule(row.key, row.time_zone, row.layers, row.overrides)


def find(reference: str | None) -> list[tuple[str, OnCallSchedule]]:
    """The schedules an operator names, with their organization's slug: ``org/key``, a ``key``
    that one organization has, or every schedule (None). Raises LookupError naming what is wrong."""
    query = (
        OnCallSchedule.select(OnCallSchedule, Organization)
        .join(Organization)
        .order_by(Organization.slug, OnCallSchedule.key)
    )
    if reference is not None:
        organization, _, key = reference.rpartition("/")
        query = query.where(OnCallSchedule.key == key)
        if organization:
            query = query.where(Organization.slug == organization)
    found = [(row.organization.slug, row) for row in query]
    if reference is not None and not found:
        raise LookupError(f"no schedule {reference!r} (pulse oncall who lists them)")
    if reference is not None and "/" not in reference and len(found) > 1:
        named = ", ".join(f"{slug}/{row.key}" for slug, row in found)
        raise LookupError(f"{reference!r} names schedules of several organizations: {named}; give one")
    return found


def instant(text: str | None, zone: ZoneInfo) -> datetime:
    """An instant an operator gives: ISO 8601 with an offset (``2026-12-24T10:00:00-05:00``, ``...Z``),
    or without one in the schedule's zone ``zone`` (``2026-12-24T10:00``, ``2026-12-24``); None is now.
    Raises ValueError, also for a time outside `rotation.YEARS`."""
    if text is None:
        return utcnow()
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a time: expected ISO 8601, such as 2026-12-24T10:00 or 2026-12-24T10:00Z"
        ) from None
    rotation.in_years(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=zone)


def who(organization: str, row: OnCallSchedule, at: datetime, names: dict[str, str]) -> dict[str, Any]:
    """Who is on call on a stored schedule at ``at``: the person, since and until when (their
    stretch of the timeline, looked for up to `HORIZON` either side), where it comes from, and who
    is next. ``names`` are the people's names by key."""
    plan = of(row)
    timeline = shifts(plan, at - HORIZON, at + HORIZON)
    index = next(i for i, shift in enumerate(timeline) if shift.start <= at < shift.end)
    current = timeline[index]
    following = next((s for s in timeline[index + 1 :] if s.person != current.person), None)
    return {
        "organization": organization,
        "schedule": row.key,
        "name": row.name,
        "time_zone": row.time_zone,
        "at": at.astimezone(UTC).isoformat(),
        **_person(current.person, names),
        "since": None if index == 0 else current.start.isoformat(),  # None: longer than HORIZON
        "until": None if current.end == timeline[-1].end else current.end.isoformat(),
        "source": current.source,
        "next": following and {**_person(following.person, names), "from": following.start.isoformat()},
    }


def timeline(row: OnCallSchedule, start: datetime, end: datetime, names: dict[str, str]) -> list[dict[str, Any]]:
    """The shifts of a stored schedule from ``start`` to ``end``, for display."""
    return [
        {**_person(s.person, names), "from": s.start.isoformat(), "until": s.end.isoformat(), "source": s.source}
        for s in shifts(of(row), start, end)
    ]


def names(organization_id: int) -> dict[str, str]:
    """The organization's people: name by key."""
    query = Person.select(Person.key, Person.name).where(Person.organization == organization_id)
    return {p.key: p.name for p in query}


def _person(key: str | None, names: dict[str, str]) -> dict[str, Any]:
    return {"person": key, "person_name": None if key is None else names.get(key, key)}
