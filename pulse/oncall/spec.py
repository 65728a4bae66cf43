"""People, on-call schedules and escalation policies in the configuration file, written with the
rest of it (`pulse.configfile`); a component pages through the policy it names.

    people:
      - {key: alice, name: Alice, email: alice@acme.example, phone: "+14155550100", time_zone: Europe/Berlin}
    schedules:
      - key: primary
        time_zone: America/New_York
        layers:                        # a later layer wins where it has someone
          - rotation: weekly           # daily or weekly; or instead `every: 12h`
            handoff: monday 09:00      # local time in the schedule's zone (weekday: weekly only)
            start: 2026-01-05
            members: [alice, bob, carol]
            restrict: [mon-fri 09:00-17:00]   # optional: the layer covers only these local times
        overrides:
          - {person: bob, from: "2026-12-24T00:00:00-05:00", until: "2026-12-26T00:00:00-05:00"}
    escalation_policies:
      - key: default
        levels:
          - {targets: [{schedule: primary}], wait: 5m}
          - {targets: [{person: dave}, {schedule: secondary}], wait: 10m}
        repeat: 2                      # run the whole policy again up to N more times (0-9)
        contact: [sms, push, email]    # the channels a page uses, for each person paged
        ack_reminder: 2h               # optional: remind whoever acknowledged, until it is resolved
    components:
      - {key: api, escalation_policy: default, ...}

The rules of schedules are `pulse.oncall.rotation`'s. Validation refuses a person, schedule or
policy that is not declared, a handoff that does not happen in the schedule's zone (the hour
skipped when clocks go forward), and a person a policy could page by none of its channels.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from pulse.models import EscalationPolicy, OnCallSchedule, Person, utcnow
from pulse.models.oncall import CONTACTS
from pulse.notifications.spec import PushSubscription, check_email, check_phone
from pulse.oncall.rotation import (
    Schedule,
    format_every,
    in_years,
    parse_every,
    parse_handoff,
    parse_time_zone,
    parse_window,
    problems,
)
from pulse.oncall.schedules import schedule
from pulse.spec import Slug, Strict, parse_duration, show_duration, span, unique, within
from pulse.uptime.spec import ComponentSpec

if TYPE_CHECKING:
    Contact = str
else:
    Contact = Literal[tuple(CONTACTS)]

Wait = Annotated[
    timedelta, BeforeValidator(parse_duration), AfterValidator(within(timedelta(minutes=1), timedelta(hours=24)))
]
Reminder = Annotated[
    timedelta, BeforeValidator(parse_duration), AfterValidator(within(timedelta(minutes=5), timedelta(days=7)))
]


def _time_zone(value: str) -> str:
    parse_time_zone(value)  # ValueError names the zone and what is expected
    return value


TimeZone = Annotated[str, AfterValidator(_time_zone)]


class PersonSpec(Strict):
    key: Slug
    name: str = Field(min_length=1, max_length=200)
    email: str | None = Field(None, max_length=320)
    phone: str | None = Field(None, max_length=16)
    push: PushSubscription | None = None
    time_zone: TimeZone = "UTC"

    _check_email = field_validator("email")(lambda value: value if value is None else check_email(value))
    _check_phone = field_validator("phone")(lambda value: value if value is None else check_phone(value))

    @model_validator(mode="after")
    def _reachable(self) -> PersonSpec:
        if not (self.email or self.phone or self.push):
            raise ValueError("a person needs a way to be paged: email, phone or push")
        return self


class LayerSpec(Strict):
    rotation: Literal["daily", "weekly"] | None = None
    every: str | None = None
    handoff: str
    start: date
    members: list[Slug] = Field(min_length=1, max_length=100)
    restrict: list[str] = Field(default_factory=list, max_length=50)

    @field_validator("every")
    @classmethod
    def _every(cls, value: str | None) -> str | None:
        return value if value is None else format_every(parse_every(value))

    @field_validator("start")
    @classmethod
    def _start(cls, value: date) -> date:
        in_years(value)
        return value

    @field_validator("handoff")
    @classmethod
    def _handoff(cls, value: str) -> str:
        parse_handoff(value)
        return value

    @field_validator("restrict")
    @classmethod
    def _restrict(cls, value: list[str]) -> list[str]:
        for text in value:
            parse_window(text)
        return value

    @model_validator(mode="after")
    def _one_rotation(self) -> LayerSpec:
        if (self.rotation is None) == (self.every is None):
            raise ValueError(
                "give `rotation: daily` or `rotation: weekly`, or `every` (such as 12h) for another length"
            )
        return self

    def stored(self) -> dict[str, Any]:
        kind = {"rotation": self.rotation} if self.rotation else {"rotation": "every", "every": self.every}
        return {
            **kind,
            "handoff": self.handoff,
            "start": self.start.isoformat(),
            "members": self.members,
            "restrict": self.restrict,
        }


class OverrideSpec(Strict):
    person: Slug
    start: datetime = Field(alias="from")
    end: datetime = Field(alias="until")

    @field_validator("start", "end")
    @classmethod
    def _in_years(cls, value: datetime) -> datetime:
        in_years(value)
        return value

    @model_validator(mode="after")
    def _ordered(self) -> OverrideSpec:
        span(self.start, self.end, ("from", "until"))
        return self

    def stored(self) -> dict[str, str]:
        return {"person": self.person, "from": self.start.isoformat(), "until": self.end.isoformat()}


class ScheduleSpec(Strict):
    key: Slug
    name: str | None = Field(None, min_length=1, max_length=200)
    time_zone: TimeZone
    layers: list[LayerSpec] = Field(default_factory=list, max_length=20)
    overrides: list[OverrideSpec] = Field(default_factory=list, max_length=1000)

    @model_validator(mode="after")
    def _happens(self) -> ScheduleSpec:
        found = problems(self.schedule(), since=utcnow().date())
        if found:
            raise ValueError("\n".join(found))
        return self

    def schedule(self) -> Schedule:
        return schedule(self.key, self.time_zone, *self.stored())

    def stored(self) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
        return [layer.stored() for layer in self.layers], [o.stored() for o in self.overrides]


class TargetSpec(Strict):
    person: Slug | None = None
    schedule: Slug | None = None

    @model_validator(mode="after")
    def _one(self) -> TargetSpec:
        if (self.person is None) == (self.schedule is None):
            raise ValueError("a target is a person or a schedule: {person: KEY} or {schedule: KEY}")
        return self


class LevelSpec(Strict):
    targets: list[TargetSpec] = Field(min_length=1, max_length=20)
    wait: Wait = timedelta(minutes=30)


class EscalationPolicySpec(Strict):
    key: Slug
    name: str | None = Field(None, min_length=1, max_length=200)
    levels: list[LevelSpec] = Field(min_length=1, max_length=20)
    repeat: int = Field(0, ge=0, le=9)
    contact: list[Contact] = Field(default_factory=lambda: list(CONTACTS), min_length=1)
    ack_reminder: Reminder | None = None

    @field_validator("contact")
    @classmethod
    def _unique_contact(cls, value: list[str]) -> list[str]:
        unique(value, "contact")
        return value

    def stored_levels(self) -> list[dict[str, Any]]:
        return [
            {
                "targets": [t.model_dump(exclude_none=True) for t in level.targets],
                "wait_seconds": round(level.wait.total_seconds()),
            }
            for level in self.levels
        ]


def references(
    people: list[PersonSpec],
    schedules: list[ScheduleSpec],
    policies: list[EscalationPolicySpec],
    components: list[ComponentSpec],
) -> list[str]:
    """What schedules, policies and components name that the organization does not declare, and the
    people a policy could page by none of its channels."""
    found = []
    known = {p.key: p for p in people}
    members = {s.key: s for s in schedules}
    for i, spec in enumerate(schedules):
        for j, layer in enumerate(spec.layers):
            for k, key in enumerate(layer.members):
                if key not in known:
                    found.append(f"schedules[{i}].layers[{j}].members[{k}] names {key!r}, who is not in people")
        for j, override in enumerate(spec.overrides):
            if override.person not in known:
                found.append(f"schedules[{i}].overrides[{j}].person names {override.person!r}, who is not in people")
    policy_keys = {p.key for p in policies}
    pageable = {s.key: people_of(*s.stored()) for s in schedules}
    for i, policy in enumerate(policies):
        for j, level in enumerate(policy.levels):
            for k, target in enumerate(level.targets):
                where = f"escalation_policies[{i}].levels[{j}].targets[{k}]"
                if target.person is not None and target.person not in known:
                    found.append(f"{where} names the person {target.person!r}, who is not in people")
                if target.schedule is not None and target.schedule not in members:
                    found.append(f"{where} names the schedule {target.schedule!r}, which is not in schedules")
        found += [f"escalation_policies[{i}] {text}" for text in unreachable(policy, known, pageable)]
    for i, component in enumerate(components):
        if component.escalation_policy is not None and component.escalation_policy not in policy_keys:
            found.append(
                f"components[{i}].escalation_policy names {component.escalation_policy!r}, "
                "which is not in escalation_policies"
            )
    return found


def unreachable(
    policy: EscalationPolicySpec, people: Mapping[str, Any], pageable: Mapping[str, list[str]]
) -> list[str]:
    """Each person the policy can page that none of its channels reaches (``pages 'carol' by sms,
    but 'carol' has no phone...``), once. ``people``: the people by key (a `PersonSpec` or a
    `pulse.models.Person`); ``pageable``: the keys of those each schedule can page, by its key."""
    found = []
    for key, through in _paged(policy, pageable):
        person = people.get(key)
        if person is not None and not any(getattr(person, CONTACTS[c]) for c in policy.contact):
            needs = " or ".join(CONTACTS[c] for c in policy.contact)
            found.append(
                f"pages {key!r}{through} by {', '.join(policy.contact)}, but {key!r} "
                f"has no {needs}: give them one, or add a channel they have to contact"
            )
    return found


def people_of(layers: list[dict[str, Any]], overrides: list[dict[str, Any]]) -> list[str]:
    """The keys of the people a schedule's stored layers and overrides name: whom it can page."""
    return [m for layer in layers for m in layer["members"]] + [o["person"] for o in overrides]


def _paged(policy: EscalationPolicySpec, pageable: Mapping[str, list[str]]) -> Iterator[tuple[str, str]]:
    """Each person the policy can page, once, with how (" (through the schedule primary)", or "")."""
    seen = set()
    for level in policy.levels:
        for target in level.targets:
            if target.person is not None:
                found = [(target.person, "")]
            else:
                people = pageable.get(target.schedule or "", [])
                found = [(key, f" (through the schedule {target.schedule})") for key in people]
            for key, through in found:
                if key not in seen:
                    seen.add(key)
                    yield key, through


def sync(
    organization_id: int,
    people: list[PersonSpec],
    schedules: list[ScheduleSpec],
    policies: list[EscalationPolicySpec],
    *,
    prune: bool,
) -> tuple[dict[str, int], tuple[int, int, int]]:
    """Upsert the organization's people, schedules and escalation policies (by key) inside the
    caller's transaction, as the file's (owner ``file``, one more version); with ``prune``, delete
    those not named that the file made. Returns the policies' ids by key (for the components that
    name them) and how many people, schedules and policies were deleted.

    One made through the API (owner ``api``, `pulse.api`) is the file's again once the file names
    it; one the file does not name is left alone, pruned or not."""
    for person in people:
        _upsert(Person, organization_id, person.key, person_fields(person))
    for spec in schedules:
        _upsert(OnCallSchedule, organization_id, spec.key, schedule_fields(spec))
    for policy in policies:
        _upsert(EscalationPolicy, organization_id, policy.key, policy_fields(policy))
    deleted = {Person: 0, OnCallSchedule: 0, EscalationPolicy: 0}
    if prune:
        for model, named in (
            (EscalationPolicy, [p.key for p in policies]),
            (OnCallSchedule, [s.key for s in schedules]),
            (Person, [p.key for p in people]),
        ):
            deleted[model] = (
                model.delete()
                .where(model.organization == organization_id, model.key.not_in(named or [""]), model.owner == "file")
                .execute()
            )
    ids = EscalationPolicy.select(EscalationPolicy.id, EscalationPolicy.key)
    policy_ids = {p.key: p.id for p in ids.where(EscalationPolicy.organization == organization_id)}
    return policy_ids, (deleted[Person], deleted[OnCallSchedule], deleted[EscalationPolicy])


def _upsert(model: Any, organization_id: int, key: str, fields: dict[str, Any]) -> None:
    fields = {**fields, "owner": "file"}
    (
        model.insert(organization=organization_id, key=key, **fields)
        .on_conflict(
            conflict_target=[model.organization, model.key],
            update={**fields, "updated_at": utcnow(), "version": model.version + 1},
        )
        .execute()
    )


def person_fields(person: PersonSpec) -> dict[str, Any]:
    """A person's columns but its key (and owner)."""
    push = person.push.model_dump() if person.push else None
    return {
        "name": person.name,
        "email": person.email,
        "phone": person.phone,
        "push": push,
        "time_zone": person.time_zone,
    }


def schedule_fields(spec: ScheduleSpec) -> dict[str, Any]:
    """A schedule's columns but its key (and owner): its layers and overrides as stored."""
    layers, overrides = spec.stored()
    return {"name": spec.name or spec.key, "time_zone": spec.time_zone, "layers": layers, "overrides": overrides}


def policy_fields(policy: EscalationPolicySpec) -> dict[str, Any]:
    """An escalation policy's columns but its key (and owner)."""
    return {
        "name": policy.name or policy.key,
        "levels": policy.stored_levels(),
        "repeat": policy.repeat,
        "contact": policy.contact,
        "ack_reminder_seconds": round(policy.ack_reminder.total_seconds()) if policy.ack_reminder else None,
    }


def person_document(row: Person) -> dict[str, Any]:
    """The person as a configuration file declares it (what `PersonSpec` reads back as what is
    stored), its push subscription included, so that a change to some of its fields (the API's
    PATCH) is validated whole."""
    found = {"email": row.email, "phone": row.phone, "push": row.push}
    given = {name: value for name, value in found.items() if value is not None}
    return {"key": row.key, "name": row.name, **given, "time_zone": row.time_zone}


def schedule_document(row: OnCallSchedule) -> dict[str, Any]:
    """The schedule as a configuration file declares it (see `person_document`): its layers (a
    rotation of another length as ``every``) and overrides."""
    return {
        "key": row.key,
        "name": row.name,
        "time_zone": row.time_zone,
        "layers": [layer_document(layer) for layer in row.layers],
        "overrides": list(row.overrides),
    }


def layer_document(layer: dict[str, Any]) -> dict[str, Any]:
    """A stored layer as the file writes it: ``rotation`` daily or weekly, or ``every`` (such as
    12h) for another length, the other null."""
    found = {name: value for name, value in layer.items() if name not in ("rotation", "every")}
    every = layer["rotation"] == "every"
    return {"rotation": None if every else layer["rotation"], "every": layer["every"] if every else None, **found}


def policy_document(row: EscalationPolicy) -> dict[str, Any]:
    """The escalation policy as a configuration file declares it (see `person_document`): each
    level's wait, and its reminder, as a duration (``5m``)."""
    levels = [
        {"targets": level["targets"], "wait": show_duration(timedelta(seconds=level["wait_seconds"]))}
        for level in row.levels
    ]
    found = {"key": row.key, "name": row.name, "levels": levels, "repeat": row.repeat, "contact": list(row.contact)}
    if row.ack_reminder_seconds is not None:
        found["ack_reminder"] = show_duration(timedelta(seconds=row.ack_reminder_seconds))
    return found
