"""What a source's body says (`pulse.sources.formats`): each format read as its sender writes it,
every problem of a bad body named."""

import json

import pytest

from pulse.sources import formats
from tests.sources import bodies


def test_an_alertmanager_group_is_a_trigger_of_its_key_then_a_resolve():
    firing = formats.parse("alertmanager", bodies.alertmanager())
    assert (firing.action, firing.dedup_key, firing.severity) == ("trigger", '{}:{alertname="HighLatency"}', "critical")
    assert firing.summary == "p99 > 2s <api & web>"  # Go's escapes read back
    assert firing.labels == {"alertname": "HighLatency", "instance": "api-1:9100", "severity": "page"}  # as it came
    assert firing.details["alerts"][0]["labels"]["severity"] == "page"
    assert firing.details["alerts"][0]["fingerprint"] == "6a7e1f0f2c3b4d5e"
    resolved = formats.parse("alertmanager", bodies.alertmanager("resolved"))
    assert (resolved.action, resolved.dedup_key) == ("resolve", firing.dedup_key)


@pytest.mark.parametrize(
    ("label", "severity"),
    [("page", "critical"), ("Critical", "critical"), ("P1", "critical"), ("high", "error"), ("warn", "warning"),
     ("minor", "warning"), ("info", "info"), ("low", "info"), ("none", "info"), ("whatever", "error"), (None, "error")],
)  # fmt: skip
def test_a_groups_severity_label_is_one_of_the_events_apis_four(label, severity):
    body = json.loads(bodies.alertmanager())
    body["commonLabels"].pop("severity")
    if label is not None:
        body["commonLabels"]["severity"] = label
    assert formats.parse("alertmanager", json.dumps(body).encode()).severity == severity


def test_a_group_of_several_firing_says_how_many_and_a_long_group_key_is_hashed():
    alerts = [json.loads(bodies.alertmanager())["alerts"][0] for _ in range(3)]
    body = json.loads(bodies.alertmanager(alerts=alerts))
    body["groupKey"] = "k" * 300
    received = formats.parse("alertmanager", json.dumps(body).encode())
    assert received.summary == "p99 > 2s <api & web> (3 firing)"
    assert received.dedup_key.startswith("sha256:") and len(received.dedup_key) == 7 + 64


def test_grafana_is_read_and_its_test_button_recognised():
    received = formats.parse("grafana", bodies.grafana())
    assert (received.action, received.summary, received.labels["grafana_folder"]) == ("trigger", "92% used", "infra")
    assert not formats.is_test("grafana", received)
    assert formats.is_test(
        "grafana", formats.parse("grafana", bodies.grafana(alertname="TestAlert", instance="Grafana"))
    )


def test_an_event_is_read_with_its_labels_and_a_trigger_without_key_gets_one():
    received = formats.parse("events", bodies.event(component="postgres", group="database", custom_details={"a": 1}))
    assert (received.action, received.dedup_key, received.severity) == ("trigger", "disk-db-1", "critical")
    assert received.labels == {"severity": "critical", "source": "db-1", "component": "postgres", "group": "database"}
    assert received.details["custom_details"] == {"a": 1}
    keyless = json.loads(bodies.event())
    del keyless["dedup_key"]
    first, second = (formats.parse("events", json.dumps(keyless).encode()) for _ in range(2))
    assert len(first.dedup_key) == 32 and first.dedup_key != second.dedup_key
    resolve = formats.parse("events", json.dumps({"event_action": "resolve", "dedup_key": "k", "payload": 1}).encode())
    assert (resolve.action, resolve.dedup_key) == ("resolve", "k")  # a resolve's payload is ignored


@pytest.mark.parametrize(
    ("kind", "body", "problems"),
    [
        ("events", b"{",
         ["the body is not JSON: Expecting property name enclosed in double quotes (line 1, column 2)"]),
        ("events", b"[]", ["the body is not a JSON object"]),
        ("events", json.dumps({"event_action": "acknowledge"}).encode(),
         ["dedup_key must be a text of 1 to 255 characters"]),
        ("events", json.dumps({"event_action": "close", "dedup_key": "k" * 256}).encode(),
         ["event_action must be trigger, acknowledge or resolve", "dedup_key must be a text of 1 to 255 characters"]),
        ("events", bodies.event(summary="s" * 1025, severity="page", source=""),
         ["payload.summary must be a text of 1 to 1024 characters",
          "payload.source must be a text of 1 to 255 characters",
          "payload.severity must be one of critical, error, warning, info"]),
        ("events", json.dumps({"event_action": "trigger", "dedup_key": "k"}).encode(),
         ["payload must be an object: a trigger needs summary, source and severity"]),
        ("alertmanager", bodies.alertmanager(version="5"),
         ["version must be '4': this route takes alertmanager's own webhook, not a custom payload"]),
        ("alertmanager", json.dumps({"version": "4", "status": "open", "alerts": []}).encode(),
         ["groupKey must be a text", "status must be firing or resolved",
          "alerts must be a list of at least one alert"]),
        ("grafana", bodies.alertmanager(),
         ["version must be '1': this route takes grafana's own webhook, not a custom payload"]),
    ],
)  # fmt: skip
def test_every_problem_of_a_bad_body_is_named(kind, body, problems):
    with pytest.raises(ValueError) as raised:
        formats.parse(kind, body)
    assert list(raised.value.args) == problems
