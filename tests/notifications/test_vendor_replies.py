"""What a notification vendor's reply can do, whatever its status: the `send` actor on the StubBroker
against the local fakes (`tests.support.vendors`), answering as a hostile vendor, proxy or gateway
that repeats the request's credentials (`tests.support.hostile`).

Nothing a reply says reaches the notification's row, its subscriber's last error, the dead letters
or the log with the credentials in it, in any of their forms, nor as more than one short line.
(What an HTTP provider answers with an error status is quoted by `pulse.net.api.call`, tested in
`tests.notifications.test_delivery` and `tests.metrics.test_vendor_replies`.)
"""

import base64
import dataclasses
import logging

import pytest

from actors import notifications
from pulse.models import Event, FailedMessage, Notification, Organization, Subscriber
from pulse.models.event import STATUS_CHANGED
from pulse.notifications import delivery
from tests.support import hostile
from tests.support.stub import declare
from tests.support.vendors import Fail, Forge

LONGEST = 400  # characters of a text: a few words of Pulse and 300 quoted of the vendor
STATUS = {"component": {"name": "Public API"}, "from": "OPERATIONAL", "to": "MAJOR_OUTAGE"}


@pytest.fixture
def acme(database):
    return Organization.create(slug="acme", name="Acme")


@pytest.fixture
def log(caplog):
    """What the workers log at their default level."""
    caplog.set_level(logging.INFO)
    return caplog


ADDRESSES = {"resend": "ops@acme.example", "twilio": "+15551234567"}


def subscribed(organization, vendors, vendor):
    """A subscriber that ``vendor`` delivers to, and the id of its notification of an event."""
    if vendor == "push":
        subscription = vendors.push_subscription()
        kind, address, settings = "push", subscription["endpoint"], {"keys": subscription["keys"]}
    else:
        kind, address, settings = {"resend": "email", "twilio": "sms"}[vendor], ADDRESSES[vendor], {}
    Subscriber.create(organization=organization, kind=kind, address=address, settings=settings)
    event = Event.create(organization=organization, type=STATUS_CHANGED, payload=STATUS)
    [notification_id] = delivery.broadcast(event.id)
    return notification_id


def send(broker, worker, monkeypatch, config, notification_id):
    """One attempt of the `send` actor, with ``config``'s providers; the notification after it."""
    monkeypatch.setattr(notifications, "get_settings", lambda: config)
    declare(broker, notifications.send, max_retries=0).send(notification_id)
    broker.join("notifications", fail_fast=False)
    worker.join()
    return Notification.get_by_id(notification_id)


def assert_quoted(text, seen):
    """``text`` repeats none of the credentials the fake was sent, and is one short line."""
    assert seen, "the fake was sent no credentials"
    for secret in seen:
        assert secret not in text, text[:400]
    assert len(text) <= LONGEST and "\n" not in text, text[:400]


def assert_not_logged(log, seen):
    """No log line repeats a credential the fake was sent."""
    assert seen, "the fake was sent no credentials"
    for record in log.records:
        line = record.getMessage()
        assert not any(secret in line for secret in seen), line[:400]


# --- a 2xx reply: the provider's id for the message ------------------------------------------------

ID = {"resend": "id", "twilio": "sid"}


@pytest.mark.parametrize("vendor", ["resend", "twilio"])
def test_a_2xx_reply_without_an_id_leaves_no_reference(
    vendor, acme, vendors, config, broker, stub_worker, monkeypatch, log
):
    """A body without the id is not an id: it was stored whole as the reference, credentials and all."""
    seen = []

    def repeat(headers):
        seen.extend(hostile.credentials(dict(headers)))
        return 200, {"message": hostile.echo(dict(headers))}, {}

    notification_id = subscribed(acme, vendors, vendor)
    vendors.script(vendor, Forge(repeat))

    sent = send(broker, stub_worker, monkeypatch, config, notification_id)

    assert (sent.status, sent.reference) == ("sent", None)
    assert_not_logged(log, seen)


@pytest.mark.parametrize("vendor", ["resend", "twilio"])
def test_an_id_that_repeats_the_credentials_is_quoted(
    vendor, acme, vendors, config, broker, stub_worker, monkeypatch, log
):
    seen = []

    def repeat(headers):
        seen.extend(hostile.credentials(dict(headers)))
        return 200, {ID[vendor]: hostile.echo(dict(headers))}, {}

    notification_id = subscribed(acme, vendors, vendor)
    vendors.script(vendor, Forge(repeat))

    sent = send(broker, stub_worker, monkeypatch, config, notification_id)

    assert sent.status == "sent"
    assert_quoted(sent.reference, seen)
    assert sent.reference.startswith("upstream refused the request with ***")
    assert_not_logged(log, seen)


def test_a_push_location_that_repeats_the_credentials_is_quoted(
    acme, vendors, config, broker, stub_worker, monkeypatch, log
):
    seen = []

    def repeat(headers):
        seen.extend(hostile.credentials(dict(headers)))
        location = "https://push.example/m/" + " ".join(hostile.credentials(dict(headers))) + "x" * 5000
        return 201, b"", {"Location": location}

    notification_id = subscribed(acme, vendors, "push")
    vendors.script("push", Forge(repeat))

    sent = send(broker, stub_worker, monkeypatch, config, notification_id)

    assert sent.status == "sent"
    assert_quoted(sent.reference, seen)
    assert sent.reference.startswith("https://push.example/m/***")
    assert_not_logged(log, seen)


# --- an SMTP server's reply --------------------------------------------------------------------


@pytest.mark.parametrize("code", [550, 451])
def test_an_smtp_reply_that_repeats_the_password_is_quoted(
    code, acme, vendors, config, broker, stub_worker, monkeypatch, log
):
    """The password as the URL holds it, and as AUTH PLAIN and LOGIN send it: a permanent refusal
    and a last attempt alike leave none of them in the row, the last error, the dead letter or the log."""
    user, password = vendors.smtp_user, vendors.smtp_password
    smtp = dataclasses.replace(
        config, resend_api_key="", smtp_url=f"smtp://{user}:{password}@{vendors.smtp_host}:{vendors.smtp_port}"
    )
    seen = [password, b64(f"\0{user}\0{password}"), b64(password)]
    vendors.script("smtp", Fail(code, body=f"5.7.1 refused {' and '.join(seen)} {'x' * 4000}".encode()))
    notification_id = subscribed(acme, vendors, "resend")

    failed = send(broker, stub_worker, monkeypatch, smtp, notification_id)

    assert failed.status == "failed"
    assert failed.last_error.startswith(f"SMTP server {vendors.smtp_host} answered {code}: 5.7.1 refused *** and ***")
    dead = FailedMessage.get()
    for text in (failed.last_error, Subscriber.get().last_error, dead.error_message):
        assert_quoted(text, seen)
    assert not any(secret in dead.traceback for secret in seen)
    assert_not_logged(log, seen)


def b64(text):
    return base64.b64encode(text.encode()).decode()
