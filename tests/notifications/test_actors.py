"""The notifications actors on dramatiq's StubBroker, in dramatiq's own style: send, join the
queue, join the worker, assert on the rows and on what the fake vendor received."""

import dataclasses

from actors import notifications
from pulse.models import Event, FailedMessage, Notification, NotificationChannel, Organization
from pulse.models.event import INCIDENT_OPENED, STATUS_CHANGED
from pulse.notifications import delivery
from pulse.notifications.channels import CHANNELS
from pulse.rabbitmq import PRIORITY_URGENT
from tests.support.stub import declare
from tests.support.vendors import Fail


def a_webhook_notification(vendors, kind=STATUS_CHANGED):
    organization = Organization.create(slug="acme", name="Acme")
    NotificationChannel.create(
        organization=organization, key="hook", type="webhook", settings={"url": vendors.webhook_receiver()}
    )
    event = Event.create(organization=organization, type=kind, payload={"component": {"name": "Public API"}})
    [notification_id] = delivery.broadcast(event.id)
    return notification_id


def run(broker, worker):
    broker.join("notifications", fail_fast=False)
    worker.join()


def test_a_rate_limited_send_sends_itself_again_when_the_provider_says(broker, stub_worker, vendors):
    send = declare(broker, notifications.send)
    notification_id = a_webhook_notification(vendors)
    vendors.script("webhook", Fail(429, retry_after=1))

    send.send_with_options(args=(notification_id,), broker_priority=PRIORITY_URGENT)
    run(broker, stub_worker)

    assert len(vendors.attempts("webhook")) == 2 and len(vendors.received("webhook")) == 1
    sent = Notification.get_by_id(notification_id)
    assert (sent.status, sent.attempts) == ("sent", 1)  # the wait was not an attempt
    [(again, delay)] = [(m, d) for m, d in broker.enqueued if d]  # (the worker enqueues it again when due)
    assert (again.actor_name, again.args) == ("send", (notification_id,))
    assert 0 < again.kwargs["at"] - again.message_timestamp / 1000 <= 1.1
    assert 500 <= delay <= 1000
    assert again.options["broker_priority"] == PRIORITY_URGENT  # it keeps its place ahead of routine sends
    assert broker.dead_letters == []


def test_the_last_attempt_fails_the_notification_and_dead_letters_the_message(broker, stub_worker, vendors):
    send = declare(broker, notifications.send, max_retries=1, min_backoff=10)
    notification_id = a_webhook_notification(vendors)
    vendors.script("webhook", Fail(503), Fail(503))

    message = send.send(notification_id)
    run(broker, stub_worker)

    assert len(vendors.attempts("webhook")) == 2
    reason = 'Webhook answered 503: {"ok": false, "error": "Scripted failure"}'
    failed = Notification.get_by_id(notification_id)
    assert (failed.status, failed.attempts, failed.last_error) == ("failed", 2, reason)
    assert NotificationChannel.get().last_error == reason
    assert [m.message_id for m in broker.dead_letters] == [message.message_id]
    dead = FailedMessage.get(FailedMessage.message_id == message.message_id)
    assert (dead.attempts, dead.error_type) == (2, "TransientError")


def test_a_failure_before_the_last_attempt_leaves_the_notification_to_the_retry(broker, stub_worker, vendors):
    send = declare(broker, notifications.send, max_retries=1, min_backoff=10)
    notification_id = a_webhook_notification(vendors)
    vendors.script("webhook", Fail(503))

    send.send(notification_id)
    run(broker, stub_worker)

    assert len(vendors.attempts("webhook")) == 2 and len(vendors.received("webhook")) == 1
    sent = Notification.get_by_id(notification_id)
    assert (sent.status, sent.attempts) == ("sent", 2)
    assert broker.dead_letters == []


def test_a_broadcast_of_an_opened_incident_sends_urgently(broker, stub_worker, vendors):
    broadcast = declare(broker, notifications.broadcast)
    declare(broker, notifications.send)
    notification_id = a_webhook_notification(vendors, kind=INCIDENT_OPENED)
    event_id = Notification.get_by_id(notification_id).event_id

    broadcast.send(event_id)
    run(broker, stub_worker)

    sends = [m for m, _ in broker.enqueued if m.actor_name == "send"]
    assert [(m.args, m.options["broker_priority"]) for m in sends] == [((notification_id,), PRIORITY_URGENT)]
    assert Notification.get_by_id(notification_id).status == "sent"


def test_an_internal_error_on_the_last_attempt_fails_the_notification(broker, stub_worker, vendors, monkeypatch):
    def broken(notice, destination, settings, policy):
        raise KeyError("a bug")

    monkeypatch.setitem(CHANNELS, "webhook", dataclasses.replace(CHANNELS["webhook"], deliver=broken))
    send = declare(broker, notifications.send, max_retries=0)
    notification_id = a_webhook_notification(vendors)

    send.send(notification_id)
    run(broker, stub_worker)

    failed = Notification.get_by_id(notification_id)
    assert (failed.status, failed.last_error) == ("failed", "internal error (see the worker's log)")
    assert FailedMessage.get().error_type == "KeyError"
