"""Notifications end to end: real `dramatiq pulse.actors` workers, the uptime worker's events, the
fake vendors; each destination hears of each event exactly once, even when a worker dies mid-send."""

from collections import Counter
from datetime import timedelta

from actors.notifications import BATCH, broadcast
from actors.uptime import check
from pulse.models import (
    Event,
    FailedMessage,
    Notification,
    NotificationChannel,
    Subscriber,
    utcnow,
)
from pulse.models.event import INCIDENT_OPENED, INCIDENT_RESOLVED, STATUS_CHANGED
from tests.support.vendors import Fail, Hang
from tests.support.wait import wait_for

SECRET = "0123456789abcdef"
CHANNELS = ("slack", "discord", "teams", "webhook", "resend")


def subscribe_everything(organization, vendors):
    """One channel of each webhook kind, an email list, and an SMS and a push subscriber."""
    for kind, url in [
        ("slack", vendors.slack_hook()),
        ("discord", vendors.discord_hook()),
        ("teams", vendors.teams_workflow()),
        ("webhook", vendors.webhook_receiver(SECRET)),
    ]:
        NotificationChannel.create(
            organization=organization,
            key=kind,
            type=kind,
            settings={"url": url, **({"secret": SECRET} if kind == "webhook" else {})},
        )
    NotificationChannel.create(
        organization=organization, key="mail", type="email", settings={"to": ["ops@acme.example"]}
    )
    Subscriber.create(organization=organization, kind="sms", address="+15551234567")
    subscription = vendors.push_subscription()
    Subscriber.create(
        organization=organization,
        kind="push",
        address=subscription["endpoint"],
        settings={"keys": subscription["keys"]},
    )


def test_an_outage_and_its_recovery_reach_every_destination_once(
    make_component, target, vendors, provider_env, workers
):
    later = utcnow() + timedelta(days=1)  # the workers' loop leaves it alone: its checks are sent here
    component = make_component(target, failure_threshold=1, success_threshold=1, next_check_at=later)
    subscribe_everything(component.organization, vendors)
    workers(threads=4, env=provider_env)
    start = utcnow().replace(microsecond=0)

    target.answer("/health", status=503, body=b"down")
    check.send(component.id, start.isoformat())
    wait_for(
        lambda: Notification.select().where(Notification.status == "sent").count() == 14, "the outage's 14 deliveries"
    )
    target.answer("/health", status=200, body=b'{"status": "UP"}')
    check.send(component.id, (start + timedelta(seconds=30)).isoformat())
    wait_for(lambda: Notification.select().where(Notification.status == "sent").count() == 28, "all 28 deliveries")

    kinds = [e.type for e in Event.select().order_by(Event.id)]
    assert kinds == [STATUS_CHANGED, INCIDENT_OPENED, STATUS_CHANGED, INCIDENT_RESOLVED]
    for vendor in ("slack", "discord", "teams", "webhook", "resend", "twilio", "push"):
        assert len(vendors.received(vendor)) == 4, vendor
    assert Counter(m.headers["x-pulse-event"] for m in vendors.received("webhook")) == Counter(kinds)
    assert Counter(m.headers["idempotency-key"] for m in vendors.received("resend")).most_common(1)[0][1] == 1
    assert Notification.select().where(Notification.status != "sent").count() == 0


def test_a_worker_killed_mid_send_delivers_once_after_a_new_one_starts(
    make_component, target, vendors, provider_env, workers
):
    component = make_component(target)
    subscribe_everything(component.organization, vendors)
    opened = Event.create(
        organization=component.organization,
        component=component,
        type=INCIDENT_OPENED,
        payload={
            "component": {"name": "Public API"},
            "incident": {"title": "Public API is down", "impact": "MAJOR_OUTAGE"},
        },
        sent_at=utcnow(),  # sent by the test, as its writer would: the outbox loop leaves it alone
    )
    vendors.script("webhook", Hang())  # the webhook delivery is in flight when the worker dies
    first = workers(threads=4, env=provider_env)

    broadcast.send(opened.id)
    wait_for(lambda: Notification.select().where(Notification.status == "sent").count() == 6, "the other 6 deliveries")
    wait_for(lambda: vendors.attempts("webhook"), "the webhook delivery to start")
    first.kill()
    workers(threads=4, env=provider_env)

    wait_for(lambda: Notification.select().where(Notification.status == "sent").count() == 7, "all 7 deliveries")
    for vendor in ("slack", "discord", "teams", "webhook", "resend", "twilio", "push"):
        assert len(vendors.received(vendor)) == 1, vendor
    webhook = Notification.get(Notification.kind == "webhook")
    assert webhook.attempts == 2  # the killed attempt and the one that delivered


def test_a_permanent_failure_is_dead_lettered_with_the_providers_reason(vendors, make_component, target, workers):
    component = make_component(target)
    NotificationChannel.create(
        organization=component.organization, key="gone", type="slack", settings={"url": vendors.slack_hook() + "x"}
    )
    changed = Event.create(
        organization=component.organization, component=component, type=STATUS_CHANGED, payload={}, sent_at=utcnow()
    )  # sent by the test, as its writer would: the outbox loop leaves it alone

    workers(threads=2)
    broadcast.send(changed.id)
    dead = wait_for(FailedMessage.get_or_none, "the dead letter")

    failed = Notification.get()
    assert (failed.status, failed.attempts, failed.last_error) == (
        "failed",
        1,
        "Slack answered 404: channel_not_found",
    )
    assert (dead.actor_name, dead.error_type, dead.error_message) == (
        "send",
        "PermanentError",
        "Slack answered 404: channel_not_found",
    )


def test_a_rate_limited_send_comes_back_after_the_wait(vendors, make_component, target, workers):
    component = make_component(target)
    NotificationChannel.create(
        organization=component.organization, key="s", type="slack", settings={"url": vendors.slack_hook()}
    )
    changed = Event.create(
        organization=component.organization, component=component, type=STATUS_CHANGED, payload={}, sent_at=utcnow()
    )  # sent by the test, as its writer would: the outbox loop leaves it alone
    vendors.script("slack", Fail(429, retry_after=1))
    workers(threads=2)

    broadcast.send(changed.id)
    wait_for(lambda: Notification.select().where(Notification.status == "sent").exists(), "the delivery after the wait")

    first, second = vendors.attempts("slack")
    assert second.at - first.at >= 0.95
    sent = Notification.get()
    assert (sent.status, sent.attempts) == ("sent", 1)
    assert FailedMessage.select().count() == 0


def test_broadcast_of_an_event_that_does_not_exist_is_dead_lettered(workers):
    workers(threads=2)
    broadcast.send(424242)

    dead = wait_for(FailedMessage.get_or_none, "the dead letter")
    assert (dead.actor_name, dead.error_message) == ("broadcast", "event 424242 does not exist")


def test_a_large_broadcast_reaches_each_subscriber_once_in_batches(vendors, make_component, target, workers):
    component = make_component(target)
    count = 2 * BATCH + 1
    for _ in range(count):
        Subscriber.create(organization=component.organization, kind="webhook", address=vendors.webhook_receiver())
    changed = Event.create(
        organization=component.organization, component=component, type=STATUS_CHANGED, payload={}, sent_at=utcnow()
    )  # sent by the test, as its writer would: the outbox loop leaves it alone
    vendors.script("webhook", Fail(503))  # one delivery's first attempt: retried alone
    workers(threads=2)

    broadcast.send(changed.id)
    received = vendors.wait_received("webhook", count)

    assert Counter(r.headers["x-pulse-delivery"] for r in received).most_common(1)[0][1] == 1
    wait_for(lambda: Notification.select().where(Notification.status == "sent").count() == count, "every row sent")
    assert Counter(n.attempts for n in Notification.select()) == {1: count - 1, 2: 1}
    assert FailedMessage.select().count() == 0
