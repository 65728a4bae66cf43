"""`pulse oncall ack-server` on loopback: a page's link shows the alert and a button, the button
acknowledges for the person the link names, and a link for anything else, or expired, is refused;
the token never reaches the log."""

import dataclasses
import logging
import threading
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from pulse import configfile
from pulse.models import Component, Incident, Notification, OnCallAlert, utcnow
from pulse.notifications import delivery
from pulse.oncall import alerts
from pulse.oncall.ackserver import serve
from pulse.oncall.tokens import sign
from tests.oncall.test_spec import STEADY

SECRET = "s" * 40


@pytest.fixture
def alert(database):
    configfile.apply(configfile.load(STEADY))
    api = Component.get(Component.key == "api")
    incident = Incident.create(organization=api.organization_id, component=api, title="API down", started_at=utcnow())
    alerts.open_alert(incident.id, utcnow())
    return OnCallAlert.get()


@pytest.fixture
def server(config):
    settings = dataclasses.replace(config, ack_url="https://status.acme.example/ack", ack_secret=SECRET)
    running = serve(settings, "127.0.0.1", 0)
    threading.Thread(target=running.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{running.server_port}/ack", settings
    running.shutdown()
    running.server_close()


def token(alert_id, person="carol", expires=timedelta(hours=1), secret=SECRET):
    return sign(alert_id, person, utcnow() + expires, secret)


def test_the_link_asks_and_the_button_acknowledges_once(alert, server, caplog):
    url, _ = server
    caplog.set_level(logging.INFO)
    t = token(alert.id)

    asked = requests.get(url, params={"t": t}, timeout=5)
    assert asked.status_code == 200 and "Acknowledge as carol" in asked.text and "API down (API)" in asked.text
    assert asked.headers["Cache-Control"] == "no-store" and asked.headers["Referrer-Policy"] == "no-referrer"
    assert OnCallAlert.get().status == "triggered"  # opening a link acknowledges nothing

    done = requests.post(url, data={"t": t}, timeout=5)
    assert done.status_code == 200 and f"Alert {alert.id} acknowledged by carol" in done.text
    acknowledged = OnCallAlert.get()
    assert (acknowledged.status, acknowledged.acknowledged_by, acknowledged.acknowledged_via) == (
        "acknowledged",
        "carol",
        "link",
    )
    again = requests.post(url, data={"t": t}, timeout=5)
    assert again.status_code == 200 and "Nothing to do" in again.text and "acknowledged already" in again.text
    assert t not in caplog.text and t.rsplit(".", 1)[1] not in caplog.text
    assert "POST /ack 200" in caplog.text


@pytest.mark.parametrize(
    ("made", "status", "reason"),
    [
        (lambda a: token(a, expires=timedelta(seconds=-1)), 403, "The link has expired"),
        (lambda a: token(a, secret="x" * 40), 403, "signature does not match"),
        (lambda a: token(a)[:-1] + ("A" if token(a)[-1] != "A" else "B"), 403, "signature does not match"),
        (lambda a: "", 403, "incomplete or malformed"),
        (lambda a: token(a + 1), 410, "No alert"),
        (lambda a: token(a, person="zed"), 410, "No person &#x27;zed&#x27;"),
    ],
)
def test_a_link_for_anything_else_is_refused(alert, server, made, status, reason):
    url, _ = server
    refused = requests.post(url, data={"t": made(alert.id)}, timeout=5)
    assert refused.status_code == status and reason in refused.text
    assert OnCallAlert.get().status == "triggered"


def test_other_paths_methods_and_sizes_are_refused(alert, server):
    url, _ = server
    assert requests.get(url.replace("/ack", "/admin"), timeout=5).status_code == 404
    assert requests.put(url, data={"t": token(alert.id)}, timeout=5).status_code == 405
    assert requests.post(url, data={"t": "x" * 5000}, timeout=5).status_code == 413


def test_a_page_carries_a_link_for_its_person(alert, server, vendors):
    url, settings = server
    [page] = Notification.select()
    delivery.deliver(page.id, "m1", settings, at=None, final=False)

    [sms] = vendors.received("twilio")
    body = sms.form["Body"]
    assert f"Acknowledge with the link, or: pulse oncall ack {alert.id} https://status.acme.example/ack?t=" in body
    [t] = parse_qs(urlsplit(body.rsplit(" ", 1)[1]).query)["t"]
    assert requests.post(url, data={"t": t}, timeout=5).status_code == 200
    assert OnCallAlert.get().acknowledged_by == "carol"
