"""``GET /api/v1/incidents`` and ``GET /api/v1/incidents/{id}``: the token's organization's
incidents (scope ``read``), newest first a page at a time (`pulse.api.pages`), filtered by
``status`` (``open``: not resolved, at any stage; ``resolved``), ``component`` (its key) and
``since`` (started then or later); one incident with its updates, oldest first.

An incident is shown with its component's key, and the id of its on-call alert when it paged
(``GET /api/v1/alerts/{id}``).
"""

from __future__ import annotations

from typing import Any

from peewee import JOIN
from typing_extensions import TypedDict

from pulse.api import pages, params
from pulse.api.auth import Call, error
from pulse.api.declared import Operation
from pulse.models import Component, Incident, IncidentUpdate, OnCallAlert

STATUSES = ("open", "resolved")
FILTERS = (
    params.OneOf("status", "open: not resolved, at any stage; resolved.", allowed=STATUSES),
    params.Key("component", "Only the incidents of this component (its key)."),
    params.Instant("since", "Only the incidents started then or later."),
)
STATUS, COMPONENT, SINCE = FILTERS


class IncidentView(TypedDict):
    id: int
    title: str
    status: str
    impact: str
    automatic: bool
    component: str | None
    alert: int | None
    started_at: str
    resolved_at: str | None


class UpdateView(TypedDict):
    at: str
    status: str
    message: str


class IncidentDetail(IncidentView):
    updates: list[UpdateView]


class IncidentPage(TypedDict):
    incidents: list[IncidentView]
    next_cursor: str | None


def index(call: Call) -> IncidentPage:
    limit = pages.limit(call.query)
    query = listed().where(Incident.organization == call.organization_id)
    status = STATUS.read(call.query)
    if status is not None:
        query = query.where(Incident.resolved_at.is_null(status == "open"))
    component = COMPONENT.read(call.query)
    if component is not None:
        query = query.where(Component.key == component)
    since = SINCE.read(call.query)
    if since is not None:
        query = query.where(Incident.started_at >= since)
    before = pages.after_number(call.query)
    if before is not None:
        query = query.where(Incident.id < before)
    rows, next_cursor = pages.take(query, Incident.id.desc(), limit, "id")
    paged = _alerts(rows)
    return {"incidents": [shown(r, paged.get(r.id)) for r in rows], "next_cursor": next_cursor}


def one(call: Call) -> IncidentDetail:
    text = call.params["id"]
    number = params.row_id(text)
    row = None
    if number is not None:
        row = listed().where(Incident.organization == call.organization_id, Incident.id == number).first()
    if row is None:
        raise error(404, f"no incident {text[:100]!r}")
    return detail(row)


def detail(row: Incident) -> IncidentDetail:
    """An incident as ``GET /api/v1/incidents/{id}`` shows it: with its updates, oldest first."""
    updates = IncidentUpdate.select().where(IncidentUpdate.incident == row.id).order_by(IncidentUpdate.id)
    steps: list[UpdateView] = [
        {"at": u.created_at.isoformat(), "status": u.status, "message": u.message} for u in updates
    ]
    return {**shown(row, _alerts([row]).get(row.id)), "updates": steps}


def shown(row: Incident, alert_id: int | None) -> IncidentView:
    return {
        "id": row.id,
        "title": row.title,
        "status": row.status,
        "impact": row.impact,
        "automatic": row.automatic,
        "component": row.component.key if row.component is not None else None,
        "alert": alert_id,
        "started_at": row.started_at.isoformat(),
        "resolved_at": row.resolved_at and row.resolved_at.isoformat(),
    }


def listed() -> Any:
    """Incidents with their component's key, in one query."""
    return Incident.select(Incident, Component.key).join(Component, JOIN.LEFT_OUTER)


def _alerts(rows: list[Incident]) -> dict[int, int]:
    """The id of each incident's on-call alert, by the incident's id, for those that paged."""
    query = OnCallAlert.select(OnCallAlert.id, OnCallAlert.incident).where(
        OnCallAlert.incident.in_([r.id for r in rows] or [0])
    )
    return {a.incident_id: a.id for a in query if a.incident_id is not None}


EXAMPLE: IncidentView = {
    "id": 17,
    "title": "Public API is down",
    "status": "RESOLVED",
    "impact": "MAJOR_OUTAGE",
    "automatic": True,
    "component": "api",
    "alert": 4,
    "started_at": "2026-12-07T14:41:30+00:00",
    "resolved_at": "2026-12-07T14:52:00+00:00",
}
DETAIL: IncidentDetail = {
    **EXAMPLE,
    "updates": [
        {"at": "2026-12-07T14:41:30+00:00", "status": "INVESTIGATING", "message": "[STATUS_CODE] (500) == 200"},
        {"at": "2026-12-07T14:52:00+00:00", "status": "RESOLVED", "message": "all conditions passed"},
    ],
}
INDEX = Operation(
    "List the incidents, newest first",
    IncidentPage,
    query=(*pages.QUERY, *FILTERS),
    refusals=(400,),
    example={"incidents": [EXAMPLE], "next_cursor": "MTc"},
)
ONE = Operation("An incident, with its updates", IncidentDetail, refusals=(404,), example=DETAIL)
