"""`pulse notify test` and `pulse notifications` as a user runs them."""

import json

import pytest

from pulse.models import Event, Notification, NotificationChannel, Organization
from pulse.models.event import STATUS_CHANGED
from pulse.notifications import delivery
from tests.support.cli import pulse
from tests.support.vendors import Fail


def test_notify_test_sends_through_the_channel_and_prints_the_answer(database, vendors):
    acme = Organization.create(slug="acme", name="Acme")
    NotificationChannel.create(organization=acme, key="ops", type="slack", settings={"url": vendors.slack_hook()})

    sent = pulse("notify", "test", "acme/ops")

    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.startswith("sent through slack channel ops in ")
    [message] = vendors.received("slack")
    assert "Test notification from Pulse" in message.json["text"]

    vendors.script("slack", Fail(403))
    refused = pulse("notify", "test", "ops")
    assert (refused.returncode, refused.stderr) == (1, "pulse: not sent: Slack answered 403: action_prohibited\n")
    assert "hooks" not in refused.stderr and vendors.slack_hook().rsplit("/", 1)[1] not in refused.stderr

    unknown = pulse("notify", "test", "nope")
    assert (unknown.returncode, unknown.stderr) == (2, "pulse: no channel 'nope'\n")


def test_notifications_lists_recent_deliveries(database):
    acme = Organization.create(slug="acme", name="Acme")
    NotificationChannel.create(organization=acme, key="ops", type="slack", settings={"url": "https://x.example/"})
    event = Event.create(organization=acme, type=STATUS_CHANGED, payload={})
    [notification_id] = delivery.broadcast(event.id)
    Notification.update(status="failed", attempts=1, last_error="Slack answered 404: channel_not_found").execute()

    listed = pulse("notifications", "--json")

    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    stored = Notification.get_by_id(notification_id)
    assert row == {
        "id": notification_id,
        "created_at": stored.created_at.isoformat(),
        "event_id": event.id,
        "event": STATUS_CHANGED,
        "destination": "slack channel ops",
        "status": "failed",
        "attempts": 1,
        "last_error": "Slack answered 404: channel_not_found",
        "duration_ms": None,
        "sent_at": None,
    }
    table = pulse("notifications", "--status", "sent")
    assert table.returncode == 0 and "slack channel ops" not in table.stdout


@pytest.mark.parametrize("env", [{}, {"FORCE_COLOR": "1", "COLUMNS": "300"}], ids=["piped", "terminal"])
def test_a_reply_in_the_listing_is_shown_as_written_never_as_markup(database, env):
    acme = Organization.create(slug="acme", name="Acme")
    NotificationChannel.create(organization=acme, key="ops", type="slack", settings={"url": "https://x.example/"})
    delivery.broadcast(Event.create(organization=acme, type=STATUS_CHANGED, payload={}).id)
    reply = "[/x] [link=https://evil.example]https://hooks.acme.example[/link]"
    Notification.update(status="failed", attempts=1, last_error=reply).execute()

    listed = pulse("notifications", **env)

    assert listed.returncode == 0, listed.stderr
    assert reply in listed.stdout and "\x1b]8;" not in listed.stdout
