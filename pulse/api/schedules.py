"""``/api/v1/schedules`` and ``/api/v1/schedules/{key}``: the token's organization's on-call
schedules, listed by key a page at a time and made, replaced, patched and deleted as the
configuration file declares them (`pulse.oncall.spec.ScheduleSpec`), by `pulse.api.resources`.

A schedule is shown whole, as the file writes it: its layers (``rotation`` daily or weekly, or
``every`` another length) and its overrides (``from``, ``until``), their people by key (422 naming
the path of a key the organization does not have). Its overrides are part of it: a PATCH of
``overrides`` replaces the list; ``POST /api/v1/schedules/{key}/overrides`` adds one, the others
kept (`add_override`). Who is on call is computed from the row when someone is paged
(`pulse.oncall.paging`), so a write changes the next page, not the alerts' frozen policies.

As in the file, a schedule that would have a policy page a member none of its ``contact`` channels
reaches is refused (422). A schedule an escalation policy names is not deleted (409 naming them):
change those first.
"""

from __future__ import annotations

from typing import cast

from typing_extensions import TypedDict

from pulse.api.auth import Answer
from pulse.api.declared import Operation
from pulse.api.escalation_policies import unreached
from pulse.api.resources import OWNER, Resource, referenced
from pulse.api.writes import IF_MATCH, Change, invalid, validated
from pulse.models import EscalationPolicy, OnCallSchedule, Person, utcnow
from pulse.oncall import spec as oncall

OverrideView = TypedDict("OverrideView", {"person": str, "from": str, "until": str})


class LayerView(TypedDict):
    rotation: str | None  # daily or weekly
    every: str | None  # another length, such as 12h
    handoff: str
    start: str
    members: list[str]
    restrict: list[str]


class ScheduleView(TypedDict):
    key: str
    name: str
    time_zone: str
    layers: list[LayerView]
    overrides: list[OverrideView]


class SchedulePage(TypedDict):
    schedules: list[ScheduleView]
    next_cursor: str | None


def shown(rows: list[OnCallSchedule]) -> list[ScheduleView]:
    return [cast(ScheduleView, oncall.schedule_document(row)) for row in rows]


def referrers(row: OnCallSchedule) -> list[str]:
    """The escalation policies that name the schedule."""
    policies = EscalationPolicy.select(EscalationPolicy.key, EscalationPolicy.levels)
    return [
        f"the escalation policy {p.key!r}"
        for p in policies.where(EscalationPolicy.organization == row.organization_id).order_by(EscalationPolicy.key)
        if any(t.get("schedule") == row.key for level in p.levels for t in level["targets"])
    ]


def _write(organization_id: int, spec: oncall.ScheduleSpec, current: OnCallSchedule | None) -> int:
    named = [
        (f"$.layers[{i}].members[{j}]", key)
        for i, layer in enumerate(spec.layers)
        for j, key in enumerate(layer.members)
    ]
    named += [(f"$.overrides[{i}].person", override.person) for i, override in enumerate(spec.overrides)]
    problems = referenced(Person, organization_id, named, "person")[1]
    if problems:
        raise invalid("schedule", problems)
    fields = oncall.schedule_fields(spec)
    if current is None:
        row_id = OnCallSchedule.insert(organization=organization_id, key=spec.key, owner=OWNER, **fields).execute()
    else:
        changes = {**fields, "owner": OWNER, "updated_at": utcnow(), "version": OnCallSchedule.version + 1}
        OnCallSchedule.update(**changes).where(OnCallSchedule.id == current.id).execute()
        row_id = current.id
    problems = unreached(organization_id, set(oncall.people_of(*spec.stored())))  # a member a policy cannot reach
    if problems:
        raise invalid("schedule", [f"$: {text}" for text in problems])
    return row_id


SCHEDULES = Resource(
    name="schedule",
    plural="schedules",
    model=OnCallSchedule,
    identifier="key",
    spec=oncall.ScheduleSpec,
    view=ScheduleView,
    page=SchedulePage,
    show=shown,
    document=oncall.schedule_document,
    write=_write,
    existing=lambda organization_id, spec: OnCallSchedule.get_or_none(
        OnCallSchedule.organization == organization_id, OnCallSchedule.key == spec.key
    ),
    referrers=referrers,
    example={
        "key": "primary",
        "name": "Primary",
        "time_zone": "America/New_York",
        "layers": [
            {
                "rotation": "weekly",
                "every": None,
                "handoff": "monday 09:00",
                "start": "2026-01-05",
                "members": ["alice", "bob"],
                "restrict": [],
            }
        ],
        "overrides": [{"person": "bob", "from": "2026-12-24T00:00:00-05:00", "until": "2026-12-26T00:00:00-05:00"}],
    },
    body_example={
        "key": "primary",
        "time_zone": "America/New_York",
        "layers": [
            {"rotation": "weekly", "handoff": "monday 09:00", "start": "2026-01-05", "members": ["alice", "bob"]}
        ],
    },
    patch_example={
        "overrides": [{"person": "bob", "from": "2026-12-24T00:00:00-05:00", "until": "2026-12-26T00:00:00-05:00"}]
    },
)


def add_override(change: Change) -> Answer:
    """``POST /api/v1/schedules/{key}/overrides``: one override added to the schedule, its others
    kept, as a PATCH of the whole list would (the same refusals and answer, 201): the schedule is
    locked first, so that two overrides added at once are both kept."""
    override = validated(oncall.OverrideSpec, change.document, "override", "person, from and until")
    problems = referenced(Person, change.organization_id, [("$.person", override.person)], "person")[1]
    if problems:
        raise invalid("override", problems)
    locked = OnCallSchedule.select().for_update()
    current = SCHEDULES.named(change.organization_id, change.params["key"], locked)
    patch = {"overrides": [*current.overrides, override.stored()]}
    answer = SCHEDULES.patch(Change(change.organization_id, change.params, patch, change.if_match))
    return Answer(answer.body, status=201, headers={**answer.headers, "Location": f"{SCHEDULES.path}/{current.key}"})


ADD_OVERRIDE = Operation(
    "Add an override to a schedule, its other overrides kept",
    ScheduleView,
    status=201,
    body=oncall.OverrideSpec,
    headers=(IF_MATCH,),
    refusals=(404, 409, 412),
    answer_headers=("ETag", "Location"),
    example=SCHEDULES.example,
    body_example={"person": "bob", "from": "2026-12-31T18:00:00-05:00", "until": "2027-01-01T09:00:00-05:00"},
)
