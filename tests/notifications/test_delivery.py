"""Delivering notifications: every channel against a local fake of its vendor, the rows it leaves."""

import dataclasses
import json
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from hashlib import md5

import pytest

from pulse.errors import PermanentError, TransientError
from pulse.models import Event, Notification, NotificationChannel, Organization, Subscriber
from pulse.models.event import ADDRESSED, CHANNELS_ONLY, EVERYONE, INCIDENT_OPENED, STATUS_CHANGED
from pulse.net.api import MAX_RETRY_AFTER_S
from pulse.notifications import delivery
from pulse.notifications.channels import webhook
from pulse.notifications.channels.notice import CRITICAL
from pulse.notifications.channels.text import COLORS
from pulse.notifications.delivery import Defer
from tests.support.cli import pulse
from tests.support.target import HTTPTarget
from tests.support.vendors import Fail, Forge, Hang

SINCE = "2026-12-01T14:03:00+00:00"
STATUS_PAYLOAD = {
    "component": {"id": 1, "key": "api", "name": "Public API"},
    "from": "OPERATIONAL",
    "to": "MAJOR_OUTAGE",
    "since": SINCE,
    "reason": "[STATUS] (503) == 200",
}


@pytest.fixture
def acme(database):
    return Organization.create(slug="acme", name="Acme")


def event(organization, kind=STATUS_CHANGED, payload=None):
    return Event.create(organization=organization, type=kind, payload=payload or STATUS_PAYLOAD)


def one_notification(organization, kind, settings, *, subscriber=False, event_kind=STATUS_CHANGED):
    """A channel (or subscriber) of ``kind``, an event, and its broadcast: the notification's id."""
    if subscriber:
        address = settings.pop("address")
        Subscriber.create(organization=organization, kind=kind, address=address, settings=settings)
    else:
        NotificationChannel.create(organization=organization, key=kind, type=kind, settings=settings)
    [notification_id] = delivery.broadcast(event(organization, event_kind).id)
    return notification_id


def deliver(notification_id, config, claim="m1", at=None, final=False):
    return delivery.deliver(notification_id, claim, config, at=at, final=final)


def row(notification_id):
    return Notification.get_by_id(notification_id)


# --- broadcast ---------------------------------------------------------------------------------


def test_broadcast_creates_one_row_per_matching_destination_once(acme):
    from pulse.models import Component

    api = Component.create(organization=acme, key="api", name="Public API", url="https://a.example/")
    www = Component.create(organization=acme, key="www", name="Website", url="https://w.example/")
    everything = NotificationChannel.create(organization=acme, key="all", type="slack", settings={"url": "x"})
    NotificationChannel.create(organization=acme, key="incidents", type="teams", settings={}, events=[INCIDENT_OPENED])
    NotificationChannel.create(organization=acme, key="off", type="discord", settings={}, enabled=False)
    alice = Subscriber.create(organization=acme, kind="email", address="alice@acme.example", component_ids=[api.id])
    Subscriber.create(organization=acme, kind="sms", address="+15551234567", component_ids=[www.id])
    hook = Subscriber.create(organization=acme, kind="webhook", address="https://u:p@hooks.example/x?token=s")
    other = Organization.create(slug="other", name="Other")
    NotificationChannel.create(organization=other, key="all", type="slack", settings={})
    changed = Event.create(organization=acme, component=api, type=STATUS_CHANGED, payload=STATUS_PAYLOAD)

    first = delivery.broadcast(changed.id)
    again = delivery.broadcast(changed.id)

    rows = list(Notification.select().order_by(Notification.id))
    assert first == again == [r.id for r in rows]
    assert [(r.key, r.kind, r.destination, r.status) for r in rows] == [
        (f"c{everything.id}", "slack", "slack channel all", "pending"),
        (f"s{alice.id}", "email", "email alice@acme.example", "pending"),
        (f"s{hook.id}", "webhook", f"webhook hooks.example #{md5(hook.address.encode()).hexdigest()[:8]}", "pending"),
    ]


@pytest.mark.parametrize(("audience", "told"), [(EVERYONE, ["c", "s"]), (CHANNELS_ONLY, ["c"]), (ADDRESSED, [])])
def test_broadcast_tells_the_events_audience(acme, audience, told):
    NotificationChannel.create(organization=acme, key="all", type="slack", settings={"url": "x"})
    Subscriber.create(organization=acme, kind="email", address="alice@acme.example")
    said = Event.create(organization=acme, type=STATUS_CHANGED, payload=STATUS_PAYLOAD, audience=audience)

    delivery.broadcast(said.id)

    assert [r.key[0] for r in Notification.select().order_by(Notification.id)] == told


def test_a_notifications_own_link_is_the_link_its_message_carries(acme, vendors, config):
    NotificationChannel.create(organization=acme, key="sms", type="sms", settings={"to": "+15551234567"})
    [notification_id] = delivery.broadcast(event(acme).id)
    Notification.update(link="https://status.acme.example/ack?t=x").where(Notification.id == notification_id).execute()

    assert deliver(notification_id, config) is None

    [sms] = vendors.received("twilio")
    assert "https://status.acme.example/ack?t=x" in sms.form["Body"]


def test_two_push_subscribers_on_one_service_are_told_apart(acme):
    endpoints = [f"https://fcm.googleapis.com/fcm/send/{name}" for name in ("phone-of-alice", "laptop-of-bob")]
    for endpoint in endpoints:
        Subscriber.create(organization=acme, kind="push", address=endpoint)
    delivery.broadcast(Event.create(organization=acme, type=STATUS_CHANGED, payload=STATUS_PAYLOAD).id)

    shown = [n.destination for n in Notification.select().order_by(Notification.id)]

    assert sorted(shown) == sorted(f"push fcm.googleapis.com #{md5(e.encode()).hexdigest()[:8]}" for e in endpoints)
    assert len(set(shown)) == 2
    assert not any("alice" in text or "bob" in text for text in shown)  # the path may be a secret


def test_broadcast_returns_only_what_is_still_to_send(acme, vendors, config):
    notification_id = one_notification(acme, "slack", {"url": vendors.slack_hook()})
    deliver(notification_id, config)
    assert delivery.broadcast(Notification.get_by_id(notification_id).event_id) == []


# --- each channel, delivered -------------------------------------------------------------------


def test_slack_gets_block_kit_with_a_fallback(acme, vendors, config):
    notification_id = one_notification(acme, "slack", {"url": vendors.slack_hook()})

    assert deliver(notification_id, config) is None

    [message] = vendors.received("slack")
    assert "Public API" in message.json["text"]
    header = message.json["blocks"][0]
    assert (header["type"], header["text"]["type"]) == ("header", "plain_text")
    assert "major outage" in header["text"]["text"].lower()
    section = message.json["blocks"][1]["text"]["text"]
    assert "[STATUS] (503) == 200" in section and "2026-12-01 14:03 UTC" in section
    actions = [b for b in message.json["blocks"] if b["type"] == "actions"]
    assert "https://status.acme.example/" in json.dumps(actions)
    done = row(notification_id)
    assert (done.status, done.attempts, done.last_error, done.claimed_by) == ("sent", 1, None, "m1")
    assert done.sent_at is not None and done.duration_ms is not None


def test_discord_gets_an_embed_colored_by_severity(acme, vendors, config):
    notification_id = one_notification(acme, "discord", {"url": vendors.discord_hook()})

    deliver(notification_id, config)

    [message] = vendors.received("discord")
    [embed] = message.json["embeds"]
    assert "Public API" in embed["title"]
    assert embed["color"] == COLORS[CRITICAL]
    assert {f["name"] for f in embed["fields"]} >= {"Status", "Since", "Organization"}
    assert message.json["allowed_mentions"] == {"parse": []}
    assert row(notification_id).status == "sent"


def test_teams_gets_an_adaptive_card(acme, vendors, config):
    notification_id = one_notification(acme, "teams", {"url": vendors.teams_workflow()})

    deliver(notification_id, config)

    [message] = vendors.received("teams")
    assert message.headers["content-type"] == "application/json; charset=utf-8"
    [attachment] = message.json["attachments"]
    card = attachment["content"]
    assert (message.json["type"], attachment["contentType"], card["type"]) == (
        "message",
        "application/vnd.microsoft.card.adaptive",
        "AdaptiveCard",
    )
    assert "Public API" in card["body"][0]["text"]
    assert row(notification_id).status == "sent"


def test_a_webhook_is_signed_with_a_delivery_id_stable_across_attempts(acme, vendors, config):
    secret = "0123456789abcdef"
    notification_id = one_notification(acme, "webhook", {"url": vendors.webhook_receiver(secret), "secret": secret})
    vendors.script("webhook", Fail(500))

    with pytest.raises(TransientError):
        deliver(notification_id, config)
    deliver(notification_id, config, claim="m1")  # the retry

    first, second = vendors.attempts("webhook")
    [accepted] = vendors.received("webhook")
    assert first.headers["x-pulse-delivery"] == second.headers["x-pulse-delivery"] == f"pulse-{notification_id}"
    timestamp = accepted.headers["x-pulse-timestamp"]
    assert accepted.headers["x-pulse-signature"] == webhook.sign(secret, int(timestamp), accepted.body)
    assert accepted.headers["x-pulse-event"] == STATUS_CHANGED
    document = accepted.json
    assert (document["id"], document["type"], document["severity"]) == (
        f"pulse-{notification_id}",
        STATUS_CHANGED,
        "critical",
    )
    assert document["component"] == {"name": "Public API", "status": "MAJOR_OUTAGE", "previous_status": "OPERATIONAL"}
    assert document["organization"] == {"name": "Acme"}
    assert (row(notification_id).status, row(notification_id).attempts) == ("sent", 2)


def test_email_through_resend_carries_the_idempotency_key(acme, vendors, config):
    notification_id = one_notification(acme, "email", {"to": ["ops@acme.example", "cto@acme.example"]})

    deliver(notification_id, config)

    [message] = vendors.received("resend")
    assert message.headers["authorization"] == f"Bearer {vendors.resend_key}"
    assert message.headers["idempotency-key"] == f"pulse-{notification_id}"
    assert message.json["to"] == ["ops@acme.example", "cto@acme.example"]
    assert message.json["from"] == config.email_from
    assert message.json["subject"].startswith("[Acme]") and "Public API" in message.json["subject"]
    assert "Public API" in message.json["text"] and "<html" in message.json["html"].lower()
    done = row(notification_id)
    assert done.status == "sent" and done.reference  # Resend's id


def test_a_resend_after_a_lost_answer_is_not_a_second_email(acme, vendors, config):
    config = dataclasses.replace(config, notify_timeout_s=0.5)
    notification_id = one_notification(acme, "email", {"to": ["ops@acme.example"]})
    deliver(notification_id, config)
    Notification.update(status="pending").where(Notification.id == notification_id).execute()  # as if unrecorded

    deliver(notification_id, config, claim="m2")

    assert len(vendors.attempts("resend")) == 2
    assert len(vendors.received("resend")) == 1  # the provider deduplicated on the Idempotency-Key


def test_email_through_smtp_when_no_resend_key(acme, vendors, config):
    smtp = dataclasses.replace(
        config, resend_api_key="", smtp_url=f"smtp://pulse:secret@{vendors.smtp_host}:{vendors.smtp_port}"
    )
    notification_id = one_notification(acme, "email", {"to": ["ops@acme.example"]})

    deliver(notification_id, smtp)

    [message] = vendors.wait_received("smtp", 1)
    mail = message.email
    assert mail["To"] == "ops@acme.example" and mail["From"] == config.email_from
    assert mail["Message-ID"] == f"<pulse-{notification_id}@{vendors.smtp_host}>"
    assert "Public API" in mail["Subject"]
    assert {part.get_content_type() for part in mail.iter_parts()} == {"text/plain", "text/html"}
    assert row(notification_id).status == "sent"


def test_sms_through_twilio(acme, vendors, config):
    notification_id = one_notification(acme, "sms", {"address": "+15551234567"}, subscriber=True)

    deliver(notification_id, config)

    [message] = vendors.received("twilio")
    assert message.form["To"] == "+15551234567" and message.form["From"] == vendors.twilio_from
    assert message.form["Body"].startswith("[Acme] Public API") and len(message.form["Body"]) <= 1600
    assert row(notification_id).reference.startswith("SM")


def test_web_push_is_encrypted_for_the_subscription(acme, vendors, config):
    subscription = vendors.push_subscription()
    notification_id = one_notification(
        acme, "push", {"address": subscription["endpoint"], "keys": subscription["keys"]}, subscriber=True
    )

    deliver(notification_id, config)

    [message] = vendors.received("push")
    shown = json.loads(message.plaintext)
    assert "Public API" in shown["title"] and shown["url"] == "https://status.acme.example/"
    assert message.headers["ttl"] == "86400" and message.headers["urgency"] == "high"
    assert row(notification_id).status == "sent"


def test_a_gone_push_subscription_stays_gone_even_when_the_file_names_it_again(acme, vendors, config, tmp_path):
    subscription = vendors.push_subscription()
    vendors.unsubscribe(subscription, status=410)
    notification_id = one_notification(
        acme, "push", {"address": subscription["endpoint"], "keys": subscription["keys"]}, subscriber=True
    )

    assert deliver(notification_id, config) is None

    failed = row(notification_id)
    assert failed.status == "failed" and "410" in failed.last_error and "gone" in failed.last_error
    assert Subscriber.get().gone_at is not None
    assert delivery.broadcast(event(acme).id) == []  # nothing more is sent to it
    # Applying a file that still lists it neither adds it back nor sends to it, and says so.
    path = tmp_path / "acme.yaml"
    path.write_text(
        "organizations:\n  - slug: acme\n    name: Acme\n    subscribers:\n"
        f"      - push: {json.dumps({'endpoint': subscription['endpoint'], 'keys': subscription['keys']})}\n"
    )
    applied = pulse("apply", "-f", str(path))
    assert applied.returncode == 0, applied.stderr
    host = urllib.parse.urlsplit(subscription["endpoint"]).hostname
    assert f"pulse: warning: subscriber acme: push {host} #" in applied.stderr and "is gone" in applied.stderr
    assert Subscriber.get().gone_at is not None
    assert delivery.broadcast(event(acme).id) == []


# --- failures ----------------------------------------------------------------------------------


def test_it_handles_429_by_waiting_without_counting_a_failure(acme, vendors, config):
    notification_id = one_notification(acme, "slack", {"url": vendors.slack_hook()})
    vendors.script("slack", Fail(429, retry_after=7))

    deferred = deliver(notification_id, config)

    assert isinstance(deferred, Defer) and 6 < deferred.at - time.time() <= 7.1
    waiting = row(notification_id)
    assert (waiting.status, waiting.attempts, waiting.claimed_by) == ("pending", 0, None)
    assert "429" in waiting.last_error
    # Every worker now waits for that destination: the next slot is past the provider's wait.
    channel = NotificationChannel.get()
    assert delivery._reserve(f"slack:c{channel.id}", 1.1) > 6


def test_discords_retry_after_in_the_body_is_honoured(acme, vendors, config):
    notification_id = one_notification(acme, "discord", {"url": vendors.discord_hook()})
    vendors.script("discord", Fail(429, retry_after=2.5))

    deferred = deliver(notification_id, config)

    assert 2.3 < deferred.at - time.time() <= 2.6


@pytest.mark.parametrize("reset_after", ["1e9", "inf"])
def test_a_discord_pause_after_a_message_is_bounded(reset_after, acme, vendors, config):
    """Discord's headers ask for a pause when the webhook's bucket is empty: however long they say,
    every worker holds off that webhook for at most `MAX_RETRY_AFTER_S` (20 minutes)."""
    notification_id = one_notification(acme, "discord", {"url": vendors.discord_hook()})
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": reset_after}
    vendors.script("discord", Forge(lambda request_headers: (204, b"", headers)))

    assert deliver(notification_id, config) is None

    assert row(notification_id).status == "sent"
    channel = NotificationChannel.get()
    assert MAX_RETRY_AFTER_S - 10 < delivery._reserve(f"discord:c{channel.id}", 0.44) <= MAX_RETRY_AFTER_S


def test_it_handles_500_as_transient(acme, vendors, config):
    notification_id = one_notification(acme, "slack", {"url": vendors.slack_hook()})
    vendors.script("slack", Fail(500))

    with pytest.raises(TransientError, match="Slack answered 500: rollup_error"):
        deliver(notification_id, config)

    failed = row(notification_id)
    assert (failed.status, failed.attempts, failed.last_error) == ("pending", 1, "Slack answered 500: rollup_error")


def test_it_handles_a_timeout_as_transient(acme, vendors, config):
    config = dataclasses.replace(config, notify_timeout_s=0.3)
    notification_id = one_notification(acme, "teams", {"url": vendors.teams_workflow()})
    vendors.script("teams", Hang())

    with pytest.raises(TransientError, match="timed out"):
        deliver(notification_id, config)
    assert row(notification_id).status == "pending"


def test_it_handles_a_permanent_rejection(acme, vendors, config):
    notification_id = one_notification(acme, "slack", {"url": vendors.slack_hook() + "-unknown"})

    with pytest.raises(PermanentError, match="Slack answered 404: channel_not_found"):
        deliver(notification_id, config)

    failed = row(notification_id)
    assert (failed.status, failed.last_error) == ("failed", "Slack answered 404: channel_not_found")
    channel = NotificationChannel.get()
    assert channel.last_error == failed.last_error and channel.last_error_at is not None
    assert "unknown" not in failed.last_error  # the URL's secret path never shows


def test_twilio_rejection_names_the_code(acme, vendors, config):
    notification_id = one_notification(acme, "sms", {"address": "+15551234567"}, subscriber=True)
    vendors.script("twilio", Fail(400))

    with pytest.raises(PermanentError, match=r"Twilio answered 400: .*\(code \d+\)"):
        deliver(notification_id, config)


def test_the_last_attempt_fails_the_notification(acme, vendors, config):
    notification_id = one_notification(acme, "slack", {"url": vendors.slack_hook()})
    vendors.script("slack", Fail(503))

    with pytest.raises(TransientError):
        deliver(notification_id, config, final=True)

    assert row(notification_id).status == "failed"


def test_unconfigured_providers_fail_at_once_with_what_to_set(acme, settings):
    notification_id = one_notification(acme, "sms", {"address": "+15551234567"}, subscriber=True)

    with pytest.raises(PermanentError, match="PULSE_TWILIO_ACCOUNT_SID"):
        deliver(notification_id, dataclasses.replace(settings, twilio_account_sid=""))


def test_no_secret_reaches_the_error_texts(acme, vendors, config):
    secret_url = vendors.webhook_receiver("0123456789abcdef") + "?token=hunter2hunter2"
    notification_id = one_notification(acme, "webhook", {"url": secret_url, "secret": "0123456789abcdef"})
    vendors.script("webhook", Fail(500))

    with pytest.raises(TransientError) as raised:
        deliver(notification_id, config)

    texts = [str(raised.value), row(notification_id).last_error, row(notification_id).destination]
    assert not any("hunter2" in text or "0123456789abcdef" in text for text in texts)


@pytest.mark.parametrize("kind", ["slack", "webhook"])
def test_a_reply_that_echoes_the_secret_path_is_stored_without_it(kind, acme, vendors, config):
    """Some frameworks answer "Cannot POST /hook/<token>": the token must not reach the row, the
    channel's last error, the dead letter or the listing."""
    url = vendors.slack_hook() if kind == "slack" else vendors.webhook_receiver() + "?key=k3y-k3y-k3y-k3y"
    parts = urllib.parse.urlsplit(url)
    secrets = [parts.path.rsplit("/", 1)[1], *([parts.query.partition("=")[2]] if parts.query else [])]
    notification_id = one_notification(acme, kind, {"url": url})
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    echoed = f"Cannot POST {target} (token {secrets[0]}, {urllib.parse.quote(parts.path)})"
    vendors.script(kind, Fail(404, body=echoed.encode()))

    with pytest.raises(PermanentError) as raised:
        deliver(notification_id, config)

    texts = [str(raised.value), row(notification_id).last_error, NotificationChannel.get().last_error]
    listed = pulse("notifications")
    assert listed.returncode == 0
    for text in [*texts, listed.stdout]:
        assert not any(secret in text for secret in secrets), text
    assert "answered 404: Cannot POST ***" in texts[0] and texts[0].endswith("(token ***, ***)")


# --- claims and pacing -------------------------------------------------------------------------


def test_a_notification_claimed_by_another_message_is_left_alone(acme, vendors, config):
    notification_id = one_notification(acme, "slack", {"url": vendors.slack_hook()})
    Notification.update(status="sending", claimed_by="other").where(Notification.id == notification_id).execute()

    assert deliver(notification_id, config, claim="mine") is None
    assert vendors.attempts("slack") == []

    # The redelivery of the message that claimed it (its worker died) takes it over.
    deliver(notification_id, config, claim="other")
    assert len(vendors.received("slack")) == 1
    assert deliver(notification_id, config, claim="other") is None  # sent: never twice
    assert len(vendors.attempts("slack")) == 1


def test_a_destination_is_paced_across_notifications(acme, vendors, config):
    hook = vendors.slack_hook()
    NotificationChannel.create(organization=acme, key="s", type="slack", settings={"url": hook})
    ids = [delivery.broadcast(event(acme).id)[0] for _ in range(4)]

    with ThreadPoolExecutor(4) as pool:  # four workers at once
        started = time.time()
        outcomes = list(pool.map(lambda i: deliver(i, config, claim=f"m{i}"), ids))

    # One goes now, one waits its slot (1.1 s) in the worker, two are deferred to theirs (2.2 s, 3.3 s).
    assert outcomes.count(None) == 2
    deferred = sorted(o.at - started for o in outcomes if isinstance(o, Defer))
    assert deferred == pytest.approx([2.2, 3.3], abs=0.25)
    first, second = vendors.received("slack")
    assert second.at - first.at >= 1.0
    assert vendors.attempts("slack") == vendors.received("slack")  # no 429 along the way
    assert Notification.select().where(Notification.status == "pending", Notification.attempts == 0).count() == 2


def test_deleted_destination_fails_the_notification(acme, vendors, config):
    notification_id = one_notification(acme, "slack", {"url": vendors.slack_hook()})
    NotificationChannel.delete().execute()

    assert deliver(notification_id, config) is None
    assert (row(notification_id).status, row(notification_id).last_error) == (
        "failed",
        "the channel, subscriber or person was deleted",
    )


def test_a_notice_says_what_happened_to_what_and_since_when():
    notice = delivery.render(
        7, STATUS_CHANGED, STATUS_PAYLOAD, datetime(2026, 12, 1, tzinfo=UTC), "Acme", "https://s.example/"
    )

    assert (notice.title, notice.severity, notice.component, notice.status, notice.previous_status) == (
        "Public API: major outage",
        "critical",
        "Public API",
        "MAJOR_OUTAGE",
        "OPERATIONAL",
    )
    assert notice.summary == "Public API went from operational to major outage. [STATUS] (503) == 200"
    assert notice.since == datetime(2026, 12, 1, 14, 3, tzinfo=UTC)
    opened = delivery.render(
        8,
        INCIDENT_OPENED,
        {"component": {"name": "Public API"}, "incident": {"title": "Public API is down", "impact": "MAJOR_OUTAGE",
                                                           "started_at": SINCE}},
        datetime(2026, 12, 1, tzinfo=UTC),
        "Acme",
        None,
    )  # fmt: skip
    assert (opened.title, opened.severity, opened.url) == ("Incident opened: Public API is down", "critical", None)


# --- every channel, every kind of failure --------------------------------------------------------


def setup(kind, acme, vendors, config):
    """A notification through ``kind`` (a vendor name), and the settings to deliver it with."""
    if kind == "smtp":
        smtp = f"smtp://pulse:secret@{vendors.smtp_host}:{vendors.smtp_port}"
        return one_notification(acme, "email", {"to": ["ops@acme.example"]}), dataclasses.replace(
            config, resend_api_key="", smtp_url=smtp
        )
    if kind == "resend":
        return one_notification(acme, "email", {"to": ["ops@acme.example"]}), config
    if kind == "twilio":
        return one_notification(acme, "sms", {"address": "+15551234567"}, subscriber=True), config
    if kind == "push":
        subscription = vendors.push_subscription()
        settings = {"address": subscription["endpoint"], "keys": subscription["keys"]}
        return one_notification(acme, "push", settings, subscriber=True), config
    url = {
        "slack": vendors.slack_hook,
        "discord": vendors.discord_hook,
        "teams": vendors.teams_workflow,
        "webhook": vendors.webhook_receiver,
    }[kind]()
    return one_notification(acme, kind, {"url": url}), config


KINDS = ("slack", "discord", "teams", "webhook", "resend", "smtp", "twilio", "push")


@pytest.mark.parametrize("kind", KINDS)
def test_every_channel_delivers(kind, acme, vendors, config):
    notification_id, settings = setup(kind, acme, vendors, config)

    assert deliver(notification_id, settings) is None

    assert len(vendors.wait_received(kind, 1)) == 1
    assert row(notification_id).status == "sent"


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "smtp"])
def test_every_channel_handles_429(kind, acme, vendors, config):
    notification_id, settings = setup(kind, acme, vendors, config)
    vendors.script(kind, Fail(429, retry_after=3))

    deferred = deliver(notification_id, settings)

    assert isinstance(deferred, Defer) and 2.5 < deferred.at - time.time() < 3.8
    assert (row(notification_id).status, row(notification_id).attempts) == ("pending", 0)


@pytest.mark.parametrize("kind", KINDS)
def test_every_channel_retries_a_server_error(kind, acme, vendors, config):
    notification_id, settings = setup(kind, acme, vendors, config)
    vendors.script(kind, Fail(451 if kind == "smtp" else 500))

    with pytest.raises(TransientError, match="451" if kind == "smtp" else "500"):
        deliver(notification_id, settings)

    assert (row(notification_id).status, row(notification_id).attempts) == ("pending", 1)
    deliver(notification_id, settings)  # the retry
    assert row(notification_id).status == "sent"


@pytest.mark.parametrize("kind", KINDS)
def test_every_channel_times_out(kind, acme, vendors, config):
    config = dataclasses.replace(config, notify_timeout_s=0.3)  # SMTP's too
    notification_id, settings = setup(kind, acme, vendors, config)
    vendors.script(kind, Hang())

    with pytest.raises(TransientError, match="timed out"):
        deliver(notification_id, settings)
    assert row(notification_id).status == "pending"


@pytest.mark.parametrize("kind", KINDS)
def test_every_channel_fails_a_permanent_rejection_at_once(kind, acme, vendors, config):
    notification_id, settings = setup(kind, acme, vendors, config)
    vendors.script(kind, Fail(550 if kind == "smtp" else 400))

    with pytest.raises(PermanentError, match="550" if kind == "smtp" else "400"):
        deliver(notification_id, settings)

    assert (row(notification_id).status, row(notification_id).attempts) == ("failed", 1)


def test_a_notification_that_does_not_exist_is_a_permanent_error(database, config):
    with pytest.raises(PermanentError, match="notification 424242 does not exist"):
        deliver(424242, config)


def test_deliveries_to_one_origin_share_a_connection_held_to_the_address_policy(acme, settings):
    with HTTPTarget() as target:
        target.answer("/hook", body=b"ok")
        for i in range(3):
            Subscriber.create(organization=acme, kind="webhook", address=target.url(f"/hook?n={i}"))
        first, second, third = delivery.broadcast(event(acme).id)

        assert deliver(first, settings) is None and deliver(second, settings) is None
        refused = dataclasses.replace(settings, allow_private_targets=False)
        with pytest.raises(TransientError, match=r"refused: 127\.0\.0\.1 is a loopback address"):
            deliver(third, refused)  # the kept connection is not one a refused address may use

        assert (target.connections, len(target.received)) == (1, 2)
        assert [row(n).status for n in (first, second, third)] == ["sent", "sent", "pending"]
