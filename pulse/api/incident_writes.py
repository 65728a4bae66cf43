"""``POST /api/v1/incidents`` and ``POST /api/v1/incidents/{id}/updates`` (scope ``incidents``,
`pulse.api.writes`): an incident opened by hand, and the updates posted to it until one resolves
it, as a status page's people write them (`pulse.components.incidents`).

An incident is opened with a title, a first message, a stage (``INVESTIGATING``, ``IDENTIFIED`` or
``MONITORING``), an impact, and the key of its component or none. A component has one open incident
at most: opening another is 409 naming the open one, to which an update is posted instead. An update
gives a stage and a message; the stage ``RESOLVED`` resolves the incident, which then takes no more.

Each write tells people as the component's own incidents do: ``incident.opened``,
``incident.updated`` or ``incident.resolved``, with the message, to the channels and subscribers
(`pulse.events`); an incident of a component with an escalation policy pages its on-call, and its
resolution resolves the alert. Both answer the incident as ``GET /api/v1/incidents/{id}`` does, 201.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pulse.api import incidents
from pulse.api.auth import Answer, error
from pulse.api.declared import Operation
from pulse.api.writes import Change, invalid, locked, validated
from pulse.components import incidents as opened
from pulse.models import Component, Incident, utcnow
from pulse.spec import Slug, Strict

SCOPE = "incidents"
MAX_MESSAGE = 5000  # characters of an update: a status page's paragraph or two; channels cut it to fit

Stage = Literal["INVESTIGATING", "IDENTIFIED", "MONITORING"]
Impact = Literal["DEGRADED_PERFORMANCE", "PARTIAL_OUTAGE", "MAJOR_OUTAGE"]


class Opening(Strict):
    """What ``POST /api/v1/incidents`` takes."""

    title: str = Field(min_length=1, max_length=300)
    message: str = Field(min_length=1, max_length=MAX_MESSAGE)
    component: Slug | None = None
    impact: Impact = "MAJOR_OUTAGE"
    status: Stage = "INVESTIGATING"


class Update(Strict):
    """What ``POST /api/v1/incidents/{id}/updates`` takes."""

    status: Stage | Literal["RESOLVED"]
    message: str = Field(min_length=1, max_length=MAX_MESSAGE)


def open_incident(change: Change) -> Answer:
    body = validated(Opening, change.document, "incident", "title, message, and component, impact, status")
    component = None
    if body.component is not None:
        component = Component.get_or_none(
            Component.organization == change.organization_id, Component.key == body.component
        )
        if component is None:
            raise invalid("incident", [f"$.component: this organization has no component {body.component!r}"])
    now = utcnow()
    incident = opened.open_by_hand(
        change.organization_id, component, body.title, body.impact, body.status, body.message, now
    )
    if incident is None:
        assert component is not None  # only a component's incidents are one at a time
        open_id = Incident.get(Incident.component == component.id, Incident.resolved_at.is_null()).id
        raise error(
            409,
            f"component {component.key!r} has an open incident, {open_id}: "
            f"POST /api/v1/incidents/{open_id}/updates to add to it",
        )
    row = incidents.listed().where(Incident.id == incident.id).get()
    return Answer(incidents.detail(row), status=201, headers={"Location": f"/api/v1/incidents/{incident.id}"})


def post_update(change: Change) -> Answer:
    row = locked(Incident, change, "incident")
    body = validated(Update, change.document, "update", "status and message")
    if row.resolved_at is not None:
        raise error(409, f"incident {row.id} is resolved: it takes no more updates (open another)")
    opened.post_update(row, body.status, body.message, utcnow())
    changed = incidents.listed().where(Incident.id == row.id).get()
    return Answer(incidents.detail(changed), status=201, headers={"Location": f"/api/v1/incidents/{row.id}"})


OPEN = Operation(
    "Open an incident by hand",
    incidents.IncidentDetail,
    status=201,
    body=Opening,
    refusals=(409,),
    answer_headers=("Location",),
    example=incidents.DETAIL,
    body_example={"title": "Payments fail", "component": "api", "message": "We are looking into failed payments."},
)
POST_UPDATE = Operation(
    "Post an update to an incident (RESOLVED resolves it)",
    incidents.IncidentDetail,
    status=201,
    body=Update,
    refusals=(404, 409),
    answer_headers=("Location",),
    example=incidents.DETAIL,
    body_example={"status": "RESOLVED", "message": "Payments go through."},
)
