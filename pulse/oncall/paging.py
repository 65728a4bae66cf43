"""Whom a level of an escalation policy pages at an instant: its people, and whoever is on call on
its schedules then, each with the contact channels they have an address for."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from pulse.models import OnCallSchedule, Person
from pulse.models.oncall import CONTACTS
from pulse.oncall.rotation import on_call
from pulse.oncall.schedules import of


@dataclasses.dataclass(frozen=True)
class Page:
    """One person to page, on each of ``channels``."""

    person_id: int
    person: str  # the person's key
    name: str
    channels: tuple[str, ...]


def targets(
    organization_id: int, level: dict[str, Any], contact: list[str], at: datetime
) -> tuple[list[Page], list[str]]:
    """The people ``level`` (``{"targets": [...], ...}``) pages at ``at``, in the order its targets
    name them, each once, with the channels of ``contact`` they have an address for; and a note for
    each target that pages no one (a schedule with no one on call, a person who is gone or has no
    address for any channel of ``contact``)."""
    notes: list[str] = []
    keys: list[str] = []
    wanted = [t["schedule"] for t in level["targets"] if "schedule" in t]
    schedules = {
        row.key: row
        for row in (
            OnCallSchedule.select().where(
                OnCallSchedule.organization == organization_id, OnCallSchedule.key.in_(wanted)
            )
            if wanted
            else []
        )
    }
    for target in level["targets"]:
        if "person" in target:
            keys.append(target["person"])
            continue
        row = schedules.get(target["schedule"])
        if row is None:
            notes.append(f"the schedule {target['schedule']} no longer exists")
            continue
        found = on_call(of(row), at)
        if not found:
            notes.append(f"no one is on call on the schedule {target['schedule']}")
        keys.extend(found)
    people = {
        p.key: p for p in Person.select().where(Person.organization == organization_id, Person.key.in_(keys or [""]))
    }
    pages = []
    for key in dict.fromkeys(keys):
        person = people.get(key)
        if person is None:
            notes.append(f"{key} is no longer one of the organization's people")
            continue
        channels = tuple(c for c in contact if getattr(person, CONTACTS[c]))
        if not channels:
            notes.append(f"{key} has no address for {', '.join(contact)}")
            continue
        pages.append(Page(person.id, person.key, person.name, channels))
    return pages, notes
