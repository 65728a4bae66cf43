"""Incidents opened and updated, alerts acknowledged and resolved, through the API on the real
service: people told by the outbox loop of a real worker (a webhook channel, an SMS page), the
alert's timeline saying who did what via the API, every refusal naming its reason, and an audit
row for each write."""

import json

import pytest
import requests

from pulse import configfile
from pulse.api.tokens import create
from pulse.models import ApiAudit, Event, Incident, IncidentUpdate, OnCallAlert, OnCallTimeline, Organization, utcnow
from pulse.oncall import alerts
from tests.support.serve import running
from tests.support.wait import wait_for

FILE = """
organizations:
  - slug: acme
    name: Acme
    people:
      - {key: carol, name: Carol, phone: "+14155550102"}
    schedules:
      - key: primary
        time_zone: UTC
        layers: [{rotation: weekly, handoff: monday 09:00, start: 2026-01-05, members: [carol]}]
    escalation_policies:
      - {key: default, levels: [{targets: [{schedule: primary}], wait: 5m}], contact: [sms]}
    components:
      - {key: api, name: API, url: "http://127.0.0.1:9/", interval: 1h, escalation_policy: default}
      - {key: web, name: Web, url: "http://127.0.0.1:9/", interval: 1h}
    channels:
      - {key: hook, type: webhook, url: "HOOK"}
"""


@pytest.fixture
def acme(database):
    configfile.apply(configfile.load(FILE.replace("HOOK", "http://127.0.0.1:9/hook")))
    return Organization.get(Organization.slug == "acme")


@pytest.fixture
def responder():
    """A token that may post incidents and answer pages, and read."""
    return create("acme", ["read", "incidents", "oncall"])[1]


def call(service, method, path, bearer, body=None, **headers):
    headers = {"Authorization": f"Bearer {bearer}", **headers}
    url = f"http://127.0.0.1:{service.port}/api/v1{path}"
    return requests.request(method, url, json=body, headers=headers, timeout=10)


def test_an_incident_posted_through_the_api_tells_people_pages_and_is_acknowledged_and_resolved(
    database, rabbit, vendors, provider_env, workers, settings
):
    hook = vendors.webhook_receiver()
    configfile.apply(configfile.load(FILE.replace("HOOK", hook)))
    token = create("acme", ["read", "incidents", "oncall"])[1]
    workers("--queues", "notifications", "oncall", threads=2, env=provider_env)

    def told(kind):
        return [json.loads(r.body) for r in vendors.received("webhook") if json.loads(r.body)["type"] == kind]

    with running(settings) as service:
        body = {"title": "Payments fail", "message": "We are looking into failed card payments.", "component": "api"}
        opened = call(service, "POST", "/incidents", token, body)
        assert opened.status_code == 201, opened.text
        incident = opened.json()
        assert opened.headers["location"] == f"/api/v1/incidents/{incident['id']}"
        assert (incident["status"], incident["impact"], incident["automatic"]) == (
            "INVESTIGATING", "MAJOR_OUTAGE", False,
        )  # fmt: skip
        assert [u["message"] for u in incident["updates"]] == [body["message"]]

        wait_for(lambda: told("incident.opened"), "the channel told of the incident")
        [notice] = told("incident.opened")
        assert (notice["title"], notice["summary"]) == ("Incident opened: Payments fail", body["message"])
        [page] = vendors.wait_received("twilio", 1)
        assert page.form["To"] == "+14155550102" and "PAGE: Payments fail" in page.form["Body"]

        update = {"status": "IDENTIFIED", "message": "A certificate expired at the card processor."}
        updated = call(service, "POST", f"/incidents/{incident['id']}/updates", token, update)
        assert updated.status_code == 201, updated.text
        assert [u["status"] for u in updated.json()["updates"]] == ["INVESTIGATING", "IDENTIFIED"]
        wait_for(lambda: told("incident.updated"), "the channel told of the update")
        assert told("incident.updated")[0]["summary"] == update["message"]

        alert = OnCallAlert.get(OnCallAlert.incident == incident["id"])
        acknowledged = call(service, "POST", f"/alerts/{alert.id}/acknowledge", token, {"by": "carol"})
        assert acknowledged.status_code == 200, acknowledged.text
        assert acknowledged.json()["acknowledged"]["by"] == "carol"
        assert acknowledged.json()["acknowledged"]["via"] == "api"

        resolved = call(
            service, "POST", f"/incidents/{incident['id']}/updates", token,
            {"status": "RESOLVED", "message": "The certificate is renewed; payments go through."},
        )  # fmt: skip
        assert resolved.status_code == 201, resolved.text
        assert resolved.json()["resolved_at"] is not None
        wait_for(lambda: told("incident.resolved"), "the channel told of the resolution")
        wait_for(lambda: OnCallAlert.get_by_id(alert.id).status == "resolved", "the alert resolved with it")

    steps = OnCallTimeline.select().where(OnCallTimeline.alert == alert.id).order_by(OnCallTimeline.id)
    assert [s.kind for s in steps] == ["opened", "paged", "acknowledged", "resolved"]
    assert len(vendors.received("twilio")) == 1  # paged once
    assert [len(told(kind)) for kind in ("incident.opened", "incident.updated", "incident.resolved")] == [1, 1, 1]
    audited = ApiAudit.select().order_by(ApiAudit.id)
    assert [(a.action, a.object_type, a.object_key, a.status) for a in audited] == [
        ("create", "incident", str(incident["id"]), 201),
        ("update", "incident", str(incident["id"]), 201),
        ("acknowledge", "alert", str(alert.id), 200),
        ("update", "incident", str(incident["id"]), 201),
    ]


def test_an_incident_of_no_component_and_an_idempotent_retry_open_one(service, responder):
    body = {"title": "Slow e-mail", "message": "Mail is delayed.", "impact": "DEGRADED_PERFORMANCE"}
    first = call(service, "POST", "/incidents", responder, body, **{"Idempotency-Key": "k1"})
    again = call(service, "POST", "/incidents", responder, body, **{"Idempotency-Key": "k1"})

    assert (first.status_code, again.status_code) == (201, 201), first.text
    assert again.json() == first.json() and again.headers["idempotent-replayed"] == "true"
    assert first.json()["component"] is None
    [incident] = Incident.select()
    [event] = Event.select()
    assert (event.type, event.incident_id, event.component_id) == ("incident.opened", incident.id, None)
    assert event.payload["message"] == "Mail is delayed." and event.sent_at is None  # the outbox loop's


@pytest.mark.parametrize(
    ("body", "problems"),
    [
        (
            {"title": "", "message": "m", "status": "DONE", "extra": 1},
            [
                "$.title: String should have at least 1 character",
                "$.status: Input should be 'INVESTIGATING', 'IDENTIFIED' or 'MONITORING'",
                "$.extra: unknown field",
            ],
        ),
        (
            {"title": "t", "message": "m", "component": "nope"},
            ["$.component: this organization has no component 'nope'"],
        ),
        ({"title": "t"}, ["$.message: Field required"]),
    ],
)
def test_an_invalid_incident_is_refused_naming_each_problem(service, responder, body, problems):
    refused = call(service, "POST", "/incidents", responder, body)

    assert refused.status_code == 422, refused.text
    assert refused.json() == {"error": "the incident is not valid", "problems": problems}
    assert Incident.select().count() == 0


def test_a_component_has_one_open_incident_and_a_resolved_one_takes_no_updates(service, responder):
    body = {"title": "Down", "message": "Down.", "component": "api"}
    first = call(service, "POST", "/incidents", responder, body)
    second = call(service, "POST", "/incidents", responder, body)
    incident = first.json()["id"]

    assert second.status_code == 409
    assert second.json()["error"] == (
        f"component 'api' has an open incident, {incident}: POST /api/v1/incidents/{incident}/updates to add to it"
    )
    done = call(service, "POST", f"/incidents/{incident}/updates", responder, {"status": "RESOLVED", "message": "Up."})
    late = call(service, "POST", f"/incidents/{incident}/updates", responder, {"status": "MONITORING", "message": "?"})
    bad = call(service, "POST", "/incidents/0/updates", responder, {"status": "MONITORING", "message": "m"})

    assert done.status_code == 201 and late.status_code == 409, late.text
    assert late.json()["error"] == f"incident {incident} is resolved: it takes no more updates (open another)"
    assert bad.status_code == 404
    assert [u.status for u in IncidentUpdate.select().order_by(IncidentUpdate.id)] == ["INVESTIGATING", "RESOLVED"]
    assert [e.type for e in Event.select().order_by(Event.id)] == ["incident.opened", "incident.resolved"]
    assert call(service, "POST", "/incidents", responder, body).status_code == 201  # a new one, once resolved


def test_an_alert_is_acknowledged_once_and_resolved_and_refusals_name_why(service, responder):
    incident = call(service, "POST", "/incidents", responder, {"title": "Down", "message": "m", "component": "api"})
    alerts.open_alert(incident.json()["id"], utcnow())  # as the on-call worker does
    alert = OnCallAlert.get()

    nobody = call(service, "POST", f"/alerts/{alert.id}/acknowledge", responder, {"by": "zed"})
    first = call(service, "POST", f"/alerts/{alert.id}/acknowledge", responder)
    again = call(service, "POST", f"/alerts/{alert.id}/acknowledge", responder)
    resolved = call(service, "POST", f"/alerts/{alert.id}/resolve", responder, {"note": "fixed the disk"})
    late = call(service, "POST", f"/alerts/{alert.id}/acknowledge", responder)
    other = call(service, "POST", "/alerts/999999/resolve", responder)

    assert nobody.status_code == 422
    assert nobody.json()["problems"] == ["$.by: this organization has no person 'zed'"]
    assert (first.status_code, again.status_code, resolved.status_code) == (200, 200, 200), first.text
    assert first.json()["acknowledged"]["by"] is None and again.json()["status"] == "acknowledged"
    assert resolved.json()["status"] == "resolved"
    assert (late.status_code, other.status_code) == (409, 404)
    steps = [(s.kind, s.note) for s in OnCallTimeline.select().where(OnCallTimeline.alert == alert.id)]
    assert [kind for kind, _ in steps] == ["opened", "paged", "acknowledged", "resolved"]
    assert steps[2][1].startswith("by an operator (api)")
    assert steps[3][1].startswith("resolved through the API: fixed the disk")


def test_the_writes_need_their_scopes(service):
    reader = create("acme", ["read", "write"])[1]
    body = {"title": "t", "message": "m"}

    for path in ("/incidents", "/incidents/1/updates", "/alerts/1/acknowledge", "/alerts/1/resolve"):
        refused = call(service, "POST", path, reader, body)
        assert refused.status_code == 403, path
    assert call(service, "POST", "/incidents", reader, body).json() == {"error": "this token lacks the incidents scope"}
    assert call(service, "POST", "/alerts/1/resolve", reader).json() == {"error": "this token lacks the oncall scope"}
    assert Incident.select().count() == 0
