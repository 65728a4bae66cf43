"""``/api/v1/escalation-policies`` and ``/api/v1/escalation-policies/{key}``: the token's
organization's escalation policies, listed by key a page at a time and made, replaced, patched and
deleted as the configuration file declares them (`pulse.oncall.spec.EscalationPolicySpec`), by
`pulse.api.resources`.

A policy is shown as the file writes it: its levels, each with its targets (a person or a schedule,
by key: 422 naming the path of a key the organization does not have) and its ``wait``, its
``repeat``, ``contact`` and ``ack_reminder``. As in the file, a person it can page (directly or on a
schedule) that none of its ``contact`` channels reaches is refused (422). An alert freezes its
policy when it opens (`pulse.oncall.alerts`): a write changes the alerts opened after it.

A policy an alert source routes to is not deleted (409 naming them): change those first. A
component that pages through it pages no one once it is deleted (its ``escalation_policy`` is
null), as when `pulse apply --prune` deletes it.
"""

from __future__ import annotations

from typing import cast

from typing_extensions import TypedDict

from pulse.api.resources import OWNER, Resource, referenced
from pulse.api.writes import invalid
from pulse.models import AlertSource, EscalationPolicy, OnCallSchedule, Person, utcnow
from pulse.oncall import spec as oncall


class TargetView(TypedDict, total=False):
    person: str
    schedule: str


class LevelView(TypedDict):
    targets: list[TargetView]
    wait: str


class EscalationPolicyView(TypedDict):
    key: str
    name: str
    levels: list[LevelView]
    repeat: int
    contact: list[str]
    ack_reminder: str | None


class EscalationPolicyPage(TypedDict):
    escalation_policies: list[EscalationPolicyView]
    next_cursor: str | None


def shown(rows: list[EscalationPolicy]) -> list[EscalationPolicyView]:
    return [cast(EscalationPolicyView, {"ack_reminder": None, **oncall.policy_document(row)}) for row in rows]


def referrers(row: EscalationPolicy) -> list[str]:
    """The alert sources that route to the policy."""
    sources = AlertSource.select(AlertSource.key, AlertSource.routes)
    return [
        f"the alert source {s.key!r}"
        for s in sources.where(AlertSource.organization == row.organization_id).order_by(AlertSource.key)
        if any(route["policy"] == row.key for route in s.routes)
    ]


def unreached(organization_id: int, among: set[str]) -> list[str]:
    """Whom of ``among`` (person keys) the organization's escalation policies page, directly or on a
    schedule, that none of their ``contact`` channels reaches, as the rows are now: in a write of a
    person or a schedule, after it, so that the API keeps the file's rule whichever object changes."""
    query = Person.select().where(Person.organization == organization_id, Person.key.in_(sorted(among) or [""]))
    people = {person.key: person for person in query}  # the others are not looked for
    schedules = OnCallSchedule.select(OnCallSchedule.key, OnCallSchedule.layers, OnCallSchedule.overrides)
    pageable = {
        s.key: oncall.people_of(s.layers, s.overrides)
        for s in schedules.where(OnCallSchedule.organization == organization_id)
    }
    found = []
    policies = EscalationPolicy.select().where(EscalationPolicy.organization == organization_id)
    for row in policies.order_by(EscalationPolicy.key):
        spec = oncall.EscalationPolicySpec.model_validate(oncall.policy_document(row))
        found += [f"the escalation policy {row.key!r} {text}" for text in oncall.unreachable(spec, people, pageable)]
    return found


def _write(organization_id: int, spec: oncall.EscalationPolicySpec, current: EscalationPolicy | None) -> int:
    targets = [
        (f"$.levels[{i}].targets[{j}]", target)
        for i, level in enumerate(spec.levels)
        for j, target in enumerate(level.targets)
    ]
    people, unknown = referenced(
        Person, organization_id, [(f"{path}.person", t.person) for path, t in targets if t.person], "person"
    )
    schedules, unscheduled = referenced(
        OnCallSchedule,
        organization_id,
        [(f"{path}.schedule", t.schedule) for path, t in targets if t.schedule],
        "schedule",
    )
    if unknown or unscheduled:
        raise invalid("escalation policy", unknown + unscheduled)
    pageable = {key: oncall.people_of(row.layers, row.overrides) for key, row in schedules.items()}
    through = sorted({key for keys in pageable.values() for key in keys} - set(people))
    query = Person.select().where(Person.organization == organization_id, Person.key.in_(through or [""]))
    people |= {person.key: person for person in query}
    problems = oncall.unreachable(spec, people, pageable)
    if problems:
        raise invalid("escalation policy", [f"$.contact: {text}" for text in problems])
    fields = oncall.policy_fields(spec)
    if current is None:
        return EscalationPolicy.insert(organization=organization_id, key=spec.key, owner=OWNER, **fields).execute()
    changes = {**fields, "owner": OWNER, "updated_at": utcnow(), "version": EscalationPolicy.version + 1}
    EscalationPolicy.update(**changes).where(EscalationPolicy.id == current.id).execute()
    return current.id


ESCALATION_POLICIES = Resource(
    name="escalation policy",
    plural="escalation-policies",
    model=EscalationPolicy,
    identifier="key",
    spec=oncall.EscalationPolicySpec,
    view=EscalationPolicyView,
    page=EscalationPolicyPage,
    show=shown,
    document=oncall.policy_document,
    write=_write,
    existing=lambda organization_id, spec: EscalationPolicy.get_or_none(
        EscalationPolicy.organization == organization_id, EscalationPolicy.key == spec.key
    ),
    referrers=referrers,
    example={
        "key": "default",
        "name": "default",
        "levels": [
            {"targets": [{"schedule": "primary"}], "wait": "5m"},
            {"targets": [{"person": "dave"}], "wait": "10m"},
        ],
        "repeat": 2,
        "contact": ["sms", "email"],
        "ack_reminder": None,
    },
    body_example={
        "key": "default",
        "levels": [{"targets": [{"schedule": "primary"}], "wait": "5m"}, {"targets": [{"person": "dave"}]}],
        "repeat": 2,
    },
    patch_example={"ack_reminder": "2h"},
)
