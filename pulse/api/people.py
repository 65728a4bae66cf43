"""``/api/v1/people`` and ``/api/v1/people/{key}``: the token's organization's people (whom on-call
pages), listed by key a page at a time and made, replaced, patched and deleted as the configuration
file declares them (`pulse.oncall.spec.PersonSpec`), by `pulse.api.resources`.

A person's contact details (``email``, ``phone``) and ``time_zone`` are shown: they are the
organization's own configuration, which an admin tool reads back. Their Web Push subscription
(``push``: its endpoint, a capability URL, and its keys) is a credential, write-only: shown only as
its service's host and a fingerprint (``push``), as notifications name it; a PATCH without it keeps it.

As in the file, a person a policy pages (directly or on a schedule) with no address for any of its
``contact`` channels is refused (422). A person a schedule or an escalation policy names is not
deleted (409 naming them): change those first.
"""

from __future__ import annotations

from typing_extensions import TypedDict

from pulse.api.escalation_policies import unreached
from pulse.api.resources import OWNER, Resource
from pulse.api.writes import invalid
from pulse.models import EscalationPolicy, OnCallSchedule, Person, utcnow
from pulse.notifications import spec as notifications
from pulse.oncall import spec as oncall


class PersonView(TypedDict):
    key: str
    name: str
    email: str | None
    phone: str | None
    push: str | None  # the push subscription's service host and fingerprint
    time_zone: str


class PersonPage(TypedDict):
    people: list[PersonView]
    next_cursor: str | None


def shown(rows: list[Person]) -> list[PersonView]:
    return [
        {
            "key": row.key,
            "name": row.name,
            "email": row.email,
            "phone": row.phone,
            "push": notifications.masked(row.push["endpoint"]) if row.push else None,
            "time_zone": row.time_zone,
        }
        for row in rows
    ]


def referrers(row: Person) -> list[str]:
    """The schedules and escalation policies that name the person."""
    schedules = OnCallSchedule.select(OnCallSchedule.key, OnCallSchedule.layers, OnCallSchedule.overrides)
    policies = EscalationPolicy.select(EscalationPolicy.key, EscalationPolicy.levels)
    return [
        *(
            f"the schedule {s.key!r}"
            for s in schedules.where(OnCallSchedule.organization == row.organization_id).order_by(OnCallSchedule.key)
            if row.key in oncall.people_of(s.layers, s.overrides)
        ),
        *(
            f"the escalation policy {p.key!r}"
            for p in policies.where(EscalationPolicy.organization == row.organization_id).order_by(EscalationPolicy.key)
            if any(t.get("person") == row.key for level in p.levels for t in level["targets"])
        ),
    ]


def _write(organization_id: int, spec: oncall.PersonSpec, current: Person | None) -> int:
    fields = oncall.person_fields(spec)
    if current is None:
        row_id = Person.insert(organization=organization_id, key=spec.key, owner=OWNER, **fields).execute()
    else:
        changes = {**fields, "owner": OWNER, "updated_at": utcnow(), "version": Person.version + 1}
        Person.update(**changes).where(Person.id == current.id).execute()
        row_id = current.id
    problems = unreached(organization_id, {spec.key})  # a contact detail taken away
    if problems:
        raise invalid("person", [f"$: {text}" for text in problems])
    return row_id


PEOPLE = Resource(
    name="person",
    plural="people",
    model=Person,
    identifier="key",
    spec=oncall.PersonSpec,
    view=PersonView,
    page=PersonPage,
    show=shown,
    document=oncall.person_document,
    write=_write,
    existing=lambda organization_id, spec: Person.get_or_none(
        Person.organization == organization_id, Person.key == spec.key
    ),
    referrers=referrers,
    secrets=("push",),
    example={
        "key": "alice",
        "name": "Alice",
        "email": "alice@acme.example",
        "phone": "+14155550100",
        "push": "push.example #5f0e3c2a",
        "time_zone": "Europe/Berlin",
    },
    body_example={"key": "alice", "name": "Alice", "email": "alice@acme.example", "time_zone": "Europe/Berlin"},
    patch_example={"phone": "+14155550100"},
)
