"""The acknowledgement links on `pulse serve` (which `pulse oncall ack-server` runs), on loopback: a
page's link shows the alert and a button, the button acknowledges for the person the link names,
and a link for anything else, or expired, is refused; the token never reaches the log."""

import dataclasses
import logging
import select
import socket
import time
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from pulse import configfile
from pulse.models import Component, Incident, Notification, OnCallAlert, utcnow
from pulse.notifications import delivery
from pulse.oncall import alerts
from pulse.oncall.tokens import LIFETIME, InvalidTokenError, sign, verify
from tests.oncall.test_spec import STEADY
from tests.support.serve import running

SECRET = "s" * 40


@pytest.fixture
def alert(database, server):
    """An alert whose pages carry links to the server (made with its settings, when paged)."""
    configfile.apply(configfile.load(STEADY))
    api = Component.get(Component.key == "api")
    incident = Incident.create(organization=api.organization_id, component=api, title="API down", started_at=utcnow())
    alerts.open_alert(incident.id, utcnow(), server[1])
    return OnCallAlert.get()


@pytest.fixture
def server(config, request):
    """The service; a test parametrizes it (indirectly) with options of `Service`."""
    settings = dataclasses.replace(config, ack_url="https://status.acme.example/ack", ack_secret=SECRET)
    with running(settings, **getattr(request, "param", {})) as service:
        yield f"http://127.0.0.1:{service.port}/ack", settings


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


def test_a_chunked_form_is_read_within_its_bound(alert, server):
    """A client library or a proxy may stream a form without a length: it is bounded as it arrives."""
    url, _ = server
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    over = requests.post(url, data=iter([b"t=" + b"x" * 5000]), headers=form, timeout=5)  # chunked: no length
    assert over.status_code == 413 and over.request.headers["Transfer-Encoding"] == "chunked"
    done = requests.post(url, data=iter([b"t=", token(alert.id).encode()]), headers=form, timeout=5)
    assert done.status_code == 200 and f"Alert {alert.id} acknowledged by carol" in done.text


def test_a_page_carries_a_link_for_its_person(alert, server, vendors):
    url, settings = server
    [page] = Notification.select()
    delivery.deliver(page.id, "m1", settings, at=None, final=False)

    [sms] = vendors.received("twilio")
    body = sms.form["Body"]
    assert f"Acknowledge with the link, or: pulse oncall ack {alert.id} https://status.acme.example/ack?t=" in body
    assert body.endswith(page.link)  # made with the page, sent as it is
    [t] = parse_qs(urlsplit(body.rsplit(" ", 1)[1]).query)["t"]
    assert verify(t, SECRET, alert.created_at + LIFETIME - timedelta(seconds=1)) == (alert.id, "carol")
    with pytest.raises(InvalidTokenError, match="expired"):
        verify(t, SECRET, alert.created_at + LIFETIME)  # a day after the page
    assert requests.post(url, data={"t": t}, timeout=5).status_code == 200
    assert OnCallAlert.get().acknowledged_by == "carol"


def connect(url):
    return socket.create_connection(("127.0.0.1", urlsplit(url).port), timeout=5)


def answer(connection):
    """What the server sends until it closes the connection (5 s at most)."""
    received = b""
    while chunk := connection.recv(4096):
        received += chunk
    return received.decode("latin-1")


def closed_unanswered(connection):
    """Whether the server closed ``connection`` without an answer (reset, when its bytes were unread)."""
    try:
        return connection.recv(4096) == b""
    except ConnectionResetError:
        return True


def refusals(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize(
    "headers",
    [
        "Content-Length: -1",
        "Content-Length: +5",
        "Content-Length: 1e3",
        "Content-Length: 0x10",
        "Content-Length: 10\r\nContent-Length: 11",
    ],
)
def test_a_post_whose_length_is_not_one_decimal_number_is_refused_at_once(alert, server, caplog, capfd, headers):
    url, _ = server
    with connect(url) as connection:  # the client keeps its side open: a body read to the end would never end
        connection.sendall(f"POST /ack HTTP/1.1\r\nHost: x\r\n{headers}\r\n\r\n".encode())
        received = answer(connection)

    assert received.startswith("HTTP/1.1 400 ")
    assert refusals(caplog) == ["Invalid HTTP request received."]  # uvicorn's (h11's refusal)
    assert "Traceback" not in capfd.readouterr().err
    assert OnCallAlert.get().status == "triggered"


@pytest.mark.parametrize("length", ["4097", "99999999999999999999"])
def test_a_post_longer_than_its_bound_is_refused_before_its_body(alert, server, caplog, capfd, length):
    url, _ = server
    caplog.set_level(logging.INFO)
    with connect(url) as connection:
        connection.sendall(f"POST /ack HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode())
        received = answer(connection)

    assert received.startswith("HTTP/1.1 413 ")
    assert refusals(caplog) == ["Refused a request from 127.0.0.1 (POST /ack): answered 413: a body over 4096 bytes."]
    assert "Traceback" not in capfd.readouterr().err
    assert OnCallAlert.get().status == "triggered"
    assert requests.post(url, data={"t": token(alert.id)}, timeout=5).status_code == 200  # it still answers


@pytest.mark.parametrize("server", [{"request_deadline_s": 1}], indirect=True)
@pytest.mark.parametrize("where", ["headers", "body", "chunked body"])
def test_a_request_dripping_in_is_cut_at_the_deadline(alert, server, caplog, capfd, where):
    """A byte every 0.2 s renews a socket's own timeout forever; the deadline is the request's. Other
    requests are served meanwhile."""
    url, _ = server
    caplog.set_level(logging.INFO)
    head = "Transfer-Encoding: chunked" if where == "chunked body" else "Content-Length: 200"
    sent = f"POST /ack HTTP/1.1\r\nHost: x\r\n{head}\r\n".encode() + (b"\r\n" if "body" in where else b"")
    served = 0
    with connect(url) as connection:
        started = time.monotonic()
        connection.sendall(sent)
        while not select.select([connection], [], [], 0.2)[0]:  # until the server closes it
            assert time.monotonic() - started < 4, "the server still reads"
            connection.sendall(
                b"X-Drip: 1\r\n" if where == "headers" else b"1\r\nX\r\n" if "chunked" in where else b"X"
            )
            served += requests.get(url, timeout=5).status_code == 403
        assert connection.recv(4096) == b""
        waited = time.monotonic() - started

    assert 0.9 < waited < 2 and served >= 3
    assert refusals(caplog) == [
        "Closed a connection from 127.0.0.1 to stay within the bounds (at most 64 connections, 32 per address): "
        "a request not sent whole within 1 s. Its client may connect again; the next closings within 60 s are "
        "summed up in one line."
    ]
    assert "Traceback" not in capfd.readouterr().err
    assert OnCallAlert.get().status == "triggered"


@pytest.mark.parametrize("server", [{"max_connections": 2}], indirect=True)
def test_a_connection_over_the_cap_closes_the_one_arriving_the_longest(alert, server, caplog):
    """Connections that never send their request cannot keep others out (when every connection runs a
    request, one more is answered 503: `tests.inbound.test_tokens`)."""
    url, _ = server
    oldest, other = connect(url), connect(url)  # served, waiting for their requests
    oldest.sendall(b"POST /ack HTTP/1.1\r\nHost: x\r\n")  # dripping: still arriving
    form = f"t={token(alert.id)}"
    with connect(url) as third:
        head = f"POST /ack HTTP/1.1\r\nHost: x\r\nContent-Length: {len(form)}\r\nConnection: close\r\n\r\n"
        third.sendall((head + form).encode())
        assert answer(third).startswith("HTTP/1.1 200 ")
    assert closed_unanswered(oldest)
    [line] = refusals(caplog)
    assert line.startswith("Closed a connection from 127.0.0.1 to stay within the bounds (at most 2 connections")
    assert ": closed to make room while a request was arriving." in line
    assert OnCallAlert.get().status == "acknowledged"
    other.close()


@pytest.mark.parametrize(
    ("request_of", "status", "said"),
    [
        (lambda t: f"GET /ack?t={t} HTTP/1.1 extra\r\n\r\n", 400, "Invalid HTTP request received."),
        # over the 16 KiB bound of a request's head, all of it sent: unread bytes would reset the connection
        (
            lambda t: f"GET /ack?t={t}&".ljust(16_385, "x") + " HTTP/1.1\r\n\r\n",
            431,
            "Closed a connection from 127.0.0.1 to stay within the bounds (at most 64 connections, 32 per address): "
            "answered 431, a request head over 16384 bytes. Its client may connect again; the next closings within "
            "60 s are summed up in one line.",
        ),
    ],
    ids=["syntax", "long"],
)
def test_a_malformed_request_is_refused_and_its_token_never_logged(
    alert, server, caplog, capfd, request_of, status, said
):
    url, _ = server
    caplog.set_level(logging.INFO)
    t = token(alert.id)
    with connect(url) as connection:
        connection.sendall(request_of(t).encode())
        assert answer(connection).startswith(f"HTTP/1.1 {status} ")

    assert refusals(caplog) == [said]
    assert t not in caplog.text and t not in capfd.readouterr().err
