"""``POST /api/v1/alerts/{id}/acknowledge`` and ``POST /api/v1/alerts/{id}/resolve`` (scope
``oncall``, `pulse.api.writes`): an on-call alert acknowledged or resolved as the command line, a
page's link or an SMS reply does it (`pulse.oncall.alerts`): the escalation stops and the pages not
sent yet are cancelled, and the alert's timeline says who did it, via ``api``.

An acknowledgement may name the person who acknowledges (``{"by": "carol"}``, a person's key): the
reminders of an alert still open then go to them. Without one, the timeline says an operator did.
A resolution may say why (``{"note": "..."}``). Doing either again changes nothing and is answered
the same, so a retry is harmless; acknowledging a resolved alert is 409. Both answer the alert as
``GET /api/v1/alerts/{id}`` does.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from pulse.api import alerts
from pulse.api.auth import Answer, error
from pulse.api.declared import Operation
from pulse.api.writes import Change, invalid, locked, validated
from pulse.models import OnCallAlert, utcnow
from pulse.models.alert import ACKNOWLEDGED, RESOLVED
from pulse.oncall import alerts as oncall
from pulse.spec import Slug, Strict

SCOPE = "oncall"
VIA = "api"


class Acknowledgement(Strict):
    """What ``POST /api/v1/alerts/{id}/acknowledge`` takes (no body at all is none of it)."""

    by: Slug | None = None


class Resolution(Strict):
    """What ``POST /api/v1/alerts/{id}/resolve`` takes (no body at all is none of it)."""

    note: str = Field(default="", max_length=500)


def acknowledge(change: Change) -> Answer:
    alert = locked(OnCallAlert, change, "alert")
    body = validated(Acknowledgement, _or_empty(change.document), "acknowledgement", "by, a person's key, or nothing")
    if alert.status == RESOLVED:
        raise error(409, f"alert {alert.id} is resolved: there is nothing to acknowledge")
    if alert.status != ACKNOWLEDGED:
        try:
            oncall.acknowledge(alert.id, body.by, VIA, utcnow())
        except LookupError:
            raise invalid("acknowledgement", [f"$.by: this organization has no person {body.by!r}"]) from None
    return Answer(alerts.detail(alerts.listed().where(OnCallAlert.id == alert.id).get()))


def resolve(change: Change) -> Answer:
    alert = locked(OnCallAlert, change, "alert")
    body = validated(Resolution, _or_empty(change.document), "resolution", "note, why, or nothing")
    if alert.status != RESOLVED:
        oncall.resolve(alert.id, f"resolved through the API{': ' + body.note if body.note else ''}", utcnow())
    return Answer(alerts.detail(alerts.listed().where(OnCallAlert.id == alert.id).get()))


def _or_empty(document: Any) -> Any:
    return {} if document is None else document


ACKNOWLEDGE = Operation(
    "Acknowledge an on-call alert: its escalation stops",
    alerts.AlertDetail,
    body=Acknowledgement,
    body_required=False,
    refusals=(404, 409),
    example=alerts.DETAIL,
    body_example={"by": "carol"},
)
RESOLVE = Operation(
    "Resolve an on-call alert",
    alerts.AlertDetail,
    body=Resolution,
    body_required=False,
    refusals=(404,),
    example=alerts.DETAIL,
    body_example={"note": "the deploy was rolled back"},
)
