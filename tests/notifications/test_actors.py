"""The notifications actors on dramatiq's StubBroker, in dramatiq's own style: send, join the
queue, join the worker, assert on the rows and on what the fake vendor received."""

import dataclasses
from collections import Counter

import pytest

from actors import notifications
from pulse.models import Event, FailedMessage, Notification, NotificationChannel, Organization, Subscriber
from pulse.models.event import INCIDENT_OPENED, STATUS_CHANGED
from pulse.notifications import delivery
from pulse.notifications.channels import CHANNELS, Sent
from pulse.rabbitmq import PRIORITY_URGENT
from tests.support.stub import declare
from tests.support.vendors import Fail

SCRIPTED = '{"ok": false, "error": "Scripted failure"}'


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


def a_large_broadcast(vendors):
    """An event and one more webhook subscriber than two batches hold: the event's id."""
    organization = Organization.create(slug="acme", name="Acme")
    for _ in range(2 * notifications.BATCH + 1):
        Subscriber.create(organization=organization, kind="webhook", address=vendors.webhook_receiver())
    return Event.create(organization=organization, type=STATUS_CHANGED, payload={"component": {"name": "API"}}).id


def test_a_large_broadcast_goes_in_batches_and_a_failed_delivery_is_retried_alone(broker, stub_worker, vendors, caplog):
    broadcast = declare(broker, notifications.broadcast)
    declare(broker, notifications.send, min_backoff=10)
    declare(broker, notifications.send_many)
    event_id = a_large_broadcast(vendors)
    vendors.script("webhook", Fail(503))  # the first delivery's first attempt

    broadcast.send(event_id)
    run(broker, stub_worker)

    batches = [m.args[0] for m, _ in broker.enqueued if m.actor_name == "send_many"]
    assert [len(ids) for ids in batches] == [notifications.BATCH, notifications.BATCH, 1]
    ids = [n for batch in batches for n in batch]
    [(retry, delay)] = [(m, d) for m, d in broker.enqueued if m.actor_name == "send" and d]  # (then again when due)
    [failed] = retry.args  # whichever delivery was first to reach the receiver (batches run side by side)
    assert (failed in ids, retry.options["retries"], delay > 0) == (True, 1, True)  # the failed one alone, later
    delivered = [r.headers["x-pulse-delivery"] for r in vendors.received("webhook")]
    assert sorted(delivered) == sorted(f"pulse-{n}" for n in ids)  # each once
    rows = {n.id: (n.status, n.attempts) for n in Notification.select()}
    assert rows == {n: ("sent", 1) for n in ids} | {failed: ("sent", 2)}
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [f"send({failed}) attempt 1/4: Webhook answered 503: {SCRIPTED}; retrying in 0.0 s."]
    assert broker.dead_letters == []


def test_a_permanent_failure_in_a_batch_fails_that_delivery_alone_and_is_a_dead_letter(broker, stub_worker, vendors):
    broadcast = declare(broker, notifications.broadcast)
    declare(broker, notifications.send)
    declare(broker, notifications.send_many)
    event_id = a_large_broadcast(vendors)
    vendors.script("webhook", Fail(404))

    broadcast.send(event_id)
    run(broker, stub_worker)

    statuses = Counter(n.status for n in Notification.select())
    assert statuses == {"sent": 2 * notifications.BATCH, "failed": 1}
    failed = Notification.get(Notification.status == "failed")
    [dead] = FailedMessage.select()
    assert (dead.actor_name, dead.args, dead.error_type, dead.attempts) == ("send", [failed.id], "PermanentError", 1)
    assert not [m for m, _ in broker.enqueued if m.actor_name == "send"]  # nothing to retry


def test_a_batch_redelivered_sends_none_twice_and_one_out_of_time_hands_the_rest_on(database, vendors, settings):
    event_id = a_large_broadcast(vendors)
    ids = delivery.broadcast(event_id)[:3]

    out_of_time = delivery.deliver_many(ids, "m1", settings, final=False, budget_s=-1)
    assert out_of_time.left == ids and vendors.attempts("webhook") == []
    assert {(n.status, n.attempts, n.claimed_by) for n in Notification.select()} == {("pending", 0, None)}

    delivery.deliver_many(ids, "m2", settings, final=False, budget_s=10)
    again = delivery.deliver_many(ids, "m2", settings, final=False, budget_s=10)  # its redelivery, once done

    assert again == delivery.Batch() and len(vendors.attempts("webhook")) == 3
    assert [Notification.get_by_id(n).status for n in ids] == ["sent"] * 3


class Killed(BaseException):
    """What a time limit raises in a worker thread (dramatiq's Interrupt is a BaseException too)."""


def test_a_batch_interrupted_records_those_it_sent_and_its_redelivery_sends_the_rest(
    database, vendors, settings, monkeypatch
):
    ids = delivery.broadcast(a_large_broadcast(vendors))[:3]
    calls = []

    def interrupted(notice, destination, settings, policy):
        calls.append(destination.delivery_id)
        if len(calls) == 2:
            raise Killed
        return Sent()

    monkeypatch.setitem(CHANNELS, "webhook", dataclasses.replace(CHANNELS["webhook"], deliver=interrupted))
    with pytest.raises(Killed):
        delivery.deliver_many(ids, "m1", settings, final=False, budget_s=10)
    assert [Notification.get_by_id(n).status for n in ids] == ["sent", "sending", "sending"]

    delivery.deliver_many(ids, "m1", settings, final=False, budget_s=10)  # the message's redelivery
    assert calls == [f"pulse-{ids[0]}", f"pulse-{ids[1]}", f"pulse-{ids[1]}", f"pulse-{ids[2]}"]
    assert [Notification.get_by_id(n).status for n in ids] == ["sent"] * 3
