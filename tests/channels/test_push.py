"""The Web Push payload: title, body, URL and a short stable tag."""

from pulse.notifications.channels import push
from tests.channels import ABSURD, HUGE, INCIDENT, NOTICE, URL, replace


def test_push_payload():
    assert push.payload(NOTICE) == {
        "title": "Public API: major outage",
        "body": "Major outage since 2026-12-01 14:03 UTC. 3 checks in a row failed: connection refused.",
        "url": URL,
        "tag": "pulse-component.status_changed-Public API",
        "severity": "critical",
        "timestamp": "2026-12-01T14:03:27+00:00",
    }


def test_push_payload_without_component_or_url():
    body = push.payload(INCIDENT)
    assert body["url"] is None
    assert body["tag"] == "pulse-incident.opened-Acme"
    assert body["body"] == "Since 2026-12-01 14:03 UTC. Some users cannot sign in."


def test_push_tag_stays_short_and_stable():
    first, second = push.payload(ABSURD)["tag"], push.payload(ABSURD)["tag"]
    assert first == second and len(first) <= 100
    assert first != push.payload(replace(ABSURD, component=HUGE[1:]))["tag"]
