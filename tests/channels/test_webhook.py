"""The generic webhook's payload, its headers and its signature."""

import hashlib
import hmac

import pytest

from pulse.notifications.channels import webhook
from tests.channels import INCIDENT, NOTICE, URL


def test_webhook_payload():
    assert webhook.payload(NOTICE, "d-1") == {
        "id": "d-1",
        "type": "component.status_changed",
        "event_id": 42,
        "occurred_at": "2026-12-01T14:03:27+00:00",
        "severity": "critical",
        "title": "Public API: major outage",
        "summary": "3 checks in a row failed: connection refused.",
        "url": URL,
        "organization": {"name": "Acme"},
        "component": {"name": "Public API", "status": "MAJOR_OUTAGE", "previous_status": "OPERATIONAL"},
    }


def test_webhook_payload_without_component_or_url():
    body = webhook.payload(INCIDENT, "d-2")
    assert body["component"] is None
    assert body["url"] is None
    assert body["type"] == "incident.opened"


def test_webhook_signature():
    body = b'{"id":"d-1"}'
    expected = hmac.new(b"s3cret", b"1764597807." + body, hashlib.sha256).hexdigest()
    assert webhook.sign("s3cret", 1764597807, body) == "v1=" + expected
    assert webhook.sign("other", 1764597807, body) != "v1=" + expected
    assert webhook.sign("s3cret", 1764597808, body) != "v1=" + expected


@pytest.mark.parametrize("secret", ["s3cret", None, ""])
def test_webhook_headers(secret):
    body = b"{}"
    headers = webhook.headers("d-1", "incident.opened", 1764597807, body, secret)
    expected = {
        "Content-Type": "application/json",
        "X-Pulse-Delivery": "d-1",
        "X-Pulse-Event": "incident.opened",
        "X-Pulse-Timestamp": "1764597807",
    }
    if secret:
        expected["X-Pulse-Signature"] = webhook.sign(secret, 1764597807, body)
    assert headers == expected
