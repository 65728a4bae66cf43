"""Hostile or odd bodies at the alert sources' URLs, on the real service and PostgreSQL: what
PostgreSQL cannot store is refused with 400 naming the problem, or, for a NUL or a lone surrogate in a
text, recorded with U+FFFD in its place, and an alert still pages; never a 500. A wrong token is
answered 404 whatever its body, which is never parsed."""

import json
import logging

import pytest
import requests

from pulse.inbound import jsonbody
from pulse.models import AlertEvent, Notification, OnCallAlert
from tests.sources import bodies
from tests.sources.conftest import ALERTMANAGER_TOKEN, EVENTS_TOKEN, GRAFANA_TOKEN
from tests.support.hostile import DEEP
from tests.support.serve import running
from tests.support.wait import wait_for

TOKENS = {"events": EVENTS_TOKEN, "alertmanager": ALERTMANAGER_TOKEN, "grafana": GRAFANA_TOKEN}
HOSTILE = {
    "NaN": (b'{"version": "4", "alerts": [{"labels": {}, "values": {"B": NaN}}]}', "$.alerts[0].values.B"),
    "Infinity": (b'{"event_action": "trigger", "payload": {"custom_details": {"x": Infinity}}}', "$.payload"),
    "-Infinity": (b"[-Infinity]", "$[0] is not a finite number"),
    "past the largest float": (b'{"x": 1e999}', "$.x is not a finite number"),
    "deep": (b'{"a": ' * 70 + b"1" + b"}" * 70, "nests more than 64 levels deep"),
    "deeper than Python reads": (DEEP, "body is nested more than 64 levels deep"),
    "not UTF-8": (b'{"a": "\xc3\x28"}', "body is not UTF-8"),
}


@pytest.fixture
def service(settings):
    with running(settings) as served:
        served.url = lambda path: f"http://127.0.0.1:{served.port}{path}"
        yield served


def post(service, kind, body, token):
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    return requests.post(service.url(f"/alerts/{kind}"), data=body, headers=headers, timeout=10)


@pytest.mark.parametrize("kind", sorted(TOKENS))
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_body_postgresql_refuses_is_400_naming_the_problem(sources, service, caplog, kind, name):
    body, problem = HOSTILE[name]
    answer = post(service, kind, body, TOKENS[kind])
    assert answer.status_code == 400, answer.text
    assert problem in answer.text
    assert AlertEvent.select().count() == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    [line] = [r for r in caplog.records if r.name == "pulse.inbound"]
    assert line.levelno == logging.WARNING and problem in line.getMessage()


@pytest.mark.parametrize("kind", sorted(TOKENS))
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_wrong_token_is_404_and_its_body_never_parsed(sources, service, monkeypatch, kind, name):
    parsed = []
    monkeypatch.setattr(jsonbody, "loads", lambda body: parsed.append(body) or (None, 0))
    body, _ = HOSTILE[name]
    for token in ("x" * 32, TOKENS["events" if kind != "events" else "grafana"]):  # unknown, another kind's
        assert post(service, kind, body, token).status_code == 404
    assert post(service, kind, body, "not a token").status_code == 404
    assert parsed == []
    assert AlertEvent.select().count() == 0


def test_nul_and_lone_surrogates_are_replaced_and_the_event_says_so(sources, service):
    body = {"event_action": "trigger", "dedup_key": "disk\u0000db-1",
            "payload": {"summary": "Disk \ud800 full", "source": "db-1", "severity": "critical", "group": "a\x00b",
                        "custom_details": {"log\u0000": "line\u0000 \udc00"}}}  # fmt: skip
    answer = post(service, "events", json.dumps(body).encode(), EVENTS_TOKEN)  # json escapes them: \u0000, \ud800
    assert answer.status_code == 202 and answer.json()["dedup_key"] == "disk\ufffddb-1"
    event = AlertEvent.get()
    assert (event.dedup_key, event.summary, event.labels["group"]) == ("disk\ufffddb-1", "Disk \ufffd full", "a\ufffdb")
    assert event.details["custom_details"] == {"log\ufffd": "line\ufffd \ufffd"}
    assert event.details["note"] == (
        "6 character(s) PostgreSQL cannot store (NUL, lone surrogates) were replaced with U+FFFD"
    )


def test_an_alertmanager_group_with_a_nul_in_a_label_is_recorded_and_paged_once(
    sources, service, rabbit, vendors, provider_env, workers
):
    nul = bodies.alertmanager().replace(b'"instance": "api-1:9100"', b'"instance": "api-1\\u0000:9100"')
    assert nul.count(b"\\u0000") == 2  # in the alert's labels and the common ones
    workers("--queues", "oncall", "notifications", threads=1, env=provider_env)
    assert post(service, "alertmanager", nul, ALERTMANAGER_TOKEN).text == "OK"
    assert post(service, "alertmanager", nul, ALERTMANAGER_TOKEN).text == "OK"  # its repeat pages no one
    wait_for(lambda: Notification.select().where(Notification.status == "sent").count() == 1, "carol's page")
    wait_for(lambda: not AlertEvent.select().where(~AlertEvent.applied).exists(), "both events applied")
    assert OnCallAlert.select().count() == 1
    assert "PAGE: p99 > 2s <api & web>" in vendors.received("twilio")[0].form["Body"]
    assert [e.labels["instance"] for e in AlertEvent.select()] == ["api-1\ufffd:9100"] * 2
    assert len(vendors.received("twilio")) == 1
