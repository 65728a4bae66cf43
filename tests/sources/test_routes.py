"""The URLs alert sources send to (`pulse.sources.routes`) on the real service: each kind answered
as its sender expects once the event is committed, a bad body or token writing nothing, and an
event over HTTP paging the on-call person at the fake SMS provider through real workers."""

import json

import pytest
import requests

from pulse.models import AlertEvent, Notification, OnCallAlert
from tests.sources import bodies
from tests.sources.conftest import ALERTMANAGER_TOKEN, EVENTS_TOKEN, GRAFANA_TOKEN
from tests.support.serve import running
from tests.support.wait import wait_for


@pytest.fixture
def service(settings):
    with running(settings) as served:
        served.url = lambda path: f"http://127.0.0.1:{served.port}{path}"
        yield served


def post(service, path, body, token=None):
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
    return requests.post(service.url(path), data=body, headers=headers, timeout=10)


def test_the_events_api_answers_as_pagerduty_does(sources, service):
    answer = post(service, "/alerts/events", bodies.event(), EVENTS_TOKEN)
    assert answer.status_code == 202
    assert answer.json() == {"status": "success", "message": "Event processed", "dedup_key": "disk-db-1"}
    (event,) = AlertEvent.select()
    assert (event.action, event.dedup_key, event.summary, event.applied) == (
        "trigger",
        "disk-db-1",
        "Disk 92% on db-1",
        False,
    )


def test_alertmanager_and_grafana_are_answered_ok_with_the_token_in_the_header_or_the_path(sources, service):
    assert post(service, "/alerts/alertmanager", bodies.alertmanager(), ALERTMANAGER_TOKEN).text == "OK"
    assert post(service, f"/alerts/grafana/{GRAFANA_TOKEN}", bodies.grafana()).text == "OK"
    assert sorted(e.source.kind for e in AlertEvent.select()) == ["alertmanager", "grafana"]


def test_grafanas_test_button_is_answered_and_records_nothing(sources, service):
    test = bodies.grafana(alertname="TestAlert", instance="Grafana")
    assert post(service, "/alerts/grafana", test, GRAFANA_TOKEN).text == "OK"
    assert post(service, "/alerts/grafana", test, "x" * 32).status_code == 404
    assert AlertEvent.select().count() == 0


def test_a_bad_event_is_400_with_its_problems_named(sources, service):
    answer = post(service, "/alerts/events", json.dumps({"event_action": "close"}).encode(), EVENTS_TOKEN)
    assert answer.status_code == 400
    assert answer.json() == {
        "status": "invalid event",
        "message": "Event object is invalid",
        "errors": [
            "event_action must be trigger, acknowledge or resolve",
            "dedup_key must be a text of 1 to 255 characters",
        ],
    }
    assert post(service, "/alerts/alertmanager", b"{}", ALERTMANAGER_TOKEN).status_code == 400
    assert post(service, "/alerts/alertmanager", b"{}", "x" * 32).status_code == 404  # the token first
    assert post(service, "/alerts/events", b"{}", ALERTMANAGER_TOKEN).status_code == 404  # another kind's
    assert AlertEvent.select().count() == 0


@pytest.mark.parametrize(
    ("path", "token", "status"),
    [("/alerts/events", ALERTMANAGER_TOKEN, 404), ("/alerts/events", "x" * 32, 404), ("/alerts/events", None, 404),
     ("/alerts/loki", EVENTS_TOKEN, 404)],
)  # fmt: skip
def test_a_token_of_another_kind_or_none_writes_nothing(sources, service, path, token, status):
    assert post(service, path, bodies.event(), token).status_code == status
    assert AlertEvent.select().count() == 0


def test_an_event_over_http_pages_the_person_on_call(sources, service, rabbit, vendors, provider_env, workers):
    workers("--queues", "oncall", "notifications", threads=1, env=provider_env)
    assert post(service, "/alerts/events", bodies.event(), EVENTS_TOKEN).status_code == 202
    wait_for(lambda: Notification.select().where(Notification.status == "sent").count() == 1, "carol's page")
    assert [m.form["To"] for m in vendors.received("twilio")] == ["+14155550102"]
    assert "PAGE: Disk 92% on db-1" in vendors.received("twilio")[0].form["Body"]
    assert post(service, "/alerts/events", bodies.event("resolve"), EVENTS_TOKEN).status_code == 202
    wait_for(lambda: OnCallAlert.get().status == "resolved", "the alert resolved")
    assert len(vendors.received("twilio")) == 1
