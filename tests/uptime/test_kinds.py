"""Check kinds end to end: a tcp component in the configuration file (its fields validated at apply
time, stored on the component row) checked through the real batch path (`actors.uptime.checks`)
into statuses and incidents, and `pulse check --tcp`."""

import json
import ssl
from datetime import UTC, datetime, timedelta

import pytest

from actors.uptime import checks
from pulse import configfile
from pulse.errors import ConfigError
from pulse.models import Component, Event, Incident, IncidentUpdate, UptimeCheck
from pulse.models.event import INCIDENT_OPENED, INCIDENT_RESOLVED, STATUS_CHANGED
from tests.support.cli import pulse
from tests.support.target import closed_port
from tests.support.tcpserver import TCPServer

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def slot(n):
    return (T0 + timedelta(seconds=30 * n)).isoformat()


def tcp_component(make_component, target, port, **fields):
    tcp = {"host": "127.0.0.1", "port": port, "send": "ready?\n", "tls": False, "verify": True}
    conditions = ["[CONNECTED] == true", "[BODY] == pat(*ready*)"]
    made = make_component(target, key="db", name="Database", url=None, conditions=conditions, **fields)
    Component.update(kind="tcp", target=tcp).where(Component.id == made.id).execute()
    return Component.get_by_id(made.id)


def test_a_tcp_component_drives_status_and_incidents_through_the_batch_path(make_component, target):
    with TCPServer("echo") as server:
        component = tcp_component(make_component, target, server.port, failure_threshold=2, success_threshold=1)
        checks.fn([[component.id, slot(0)]])
        up = UptimeCheck.get()
        assert (up.success, up.outcome, up.status_code, up.error) == (True, "OPERATIONAL", None, None)
        assert server.received == [b"ready?\n"]

    # The server is gone: the port refuses, twice, and the component is down with one incident.
    checks.fn([[component.id, slot(1)]])
    checks.fn([[component.id, slot(2)]])
    down = Component.get_by_id(component.id)
    assert (down.status, down.consecutive_failures) == ("MAJOR_OUTAGE", 2)
    [incident] = Incident.select()
    assert (incident.title, incident.resolved_at) == ("Database is down", None)
    [opened] = IncidentUpdate.select()
    assert "connection refused by 127.0.0.1" in opened.message
    failed = UptimeCheck.select().order_by(UptimeCheck.scheduled_at.desc()).first()
    assert (failed.success, failed.error) == (False, "connection refused by 127.0.0.1")
    assert failed.condition_results[0]["resolved"] == "[CONNECTED] (false) == true"

    # Back on the same port: one success resolves it.
    with TCPServer("echo") as again:
        Component.update(target=component.target | {"port": again.port}).where(Component.id == component.id).execute()
        checks.fn([[component.id, slot(3)]])
    assert Component.get_by_id(component.id).status == "OPERATIONAL"
    assert Incident.get().resolved_at is not None
    assert [e.type for e in Event.select().order_by(Event.id)] == [
        STATUS_CHANGED,
        INCIDENT_OPENED,
        STATUS_CHANGED,
        INCIDENT_RESOLVED,
    ]


def test_http_and_tcp_components_share_one_batch(make_component, target):
    with TCPServer("echo") as server:
        db = tcp_component(make_component, target, server.port)
        api = make_component(target, key="api")
        checks.fn([[db.id, slot(0)], [api.id, slot(0)]])

    rows = {r.component_id: r for r in UptimeCheck.select()}
    assert (rows[db.id].success, rows[db.id].status_code) == (True, None)
    assert (rows[api.id].success, rows[api.id].status_code) == (True, 200)
    assert len(target.received) == 1


FILE = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {key: db, name: Database, kind: tcp, host: db.internal, port: 5432, interval: 30s,
         conditions: ["[CONNECTED] == true", "[RESPONSE_TIME] < 300"]}
      - {key: mail, name: Mail, kind: tcp, host: mail.internal, port: 465, tls: true, send: "NOOP\\r\\n"}
      - {key: api, name: API, url: "https://api.acme.example/health"}
"""


def test_a_tcp_component_is_applied_from_the_file(database):
    configfile.apply(configfile.load(FILE))

    db = Component.get(Component.key == "db")
    assert (db.type, db.kind, db.url, db.interval_seconds) == ("ENDPOINT", "tcp", None, 30)
    assert db.target == {"host": "db.internal", "port": 5432, "send": None, "tls": False, "verify": True}
    assert db.conditions == ["[CONNECTED] == true", "[RESPONSE_TIME] < 300"]
    mail = Component.get(Component.key == "mail")
    assert mail.target == {"host": "mail.internal", "port": 465, "send": "NOOP\r\n", "tls": True, "verify": True}
    assert mail.conditions == ["[CONNECTED] == true"]  # the tcp kind's default
    api = Component.get(Component.key == "api")
    assert (api.kind, api.target, api.conditions) == ("http", None, ["[STATUS] < 400"])

    # The same key turned into an http check keeps nothing of its tcp fields.
    configfile.apply(configfile.load(FILE.replace("kind: tcp, host: db.internal, port: 5432", "url: http://db/")))
    db = Component.get(Component.key == "db")
    assert (db.kind, db.target, db.url) == ("http", None, "http://db/")


PLACE = "organizations[0].components[0]"


@pytest.mark.parametrize(
    "change, problem",
    [
        (("port: 5432", "port: 70000"), f"{PLACE}.port: Input should be less than or equal to 65535"),
        (("port: 5432", "port: http"), f"{PLACE}.port: Input should be a valid integer"),
        (("host: db.internal", "host: tcp://db.internal"), f"{PLACE}.host: not a host name or an IP address"),
        (("host: db.internal", "host: 'db.internal:5432'"), f"{PLACE}.host: not a host name or an IP address"),
        ((", port: 5432", ""), f"{PLACE}: a tcp check needs a host and a port"),
        (("kind: tcp", "kind: ftp"), f"{PLACE}.kind: 'ftp' is not a check kind (use http, tcp, dns, icmp, tls)"),
        (
            ("port: 5432", "port: 5432, url: 'http://db/'"),
            f"{PLACE}: url is a field of http checks, not of tcp ones",
        ),
        (("port: 5432", "port: 5432, verify: false"), f"{PLACE}: verify goes with tls: true"),
        (
            ('"[RESPONSE_TIME] < 300"', '"[STATUS] == 200"'),
            f"{PLACE}.conditions[1]: [STATUS] is not a placeholder of tcp checks"
            " (use [BODY], [CERTIFICATE_EXPIRATION], [CONNECTED], [IP], [RESPONSE_TIME])",
        ),
        (
            ("kind: tcp, host: db.internal, port: 5432", "host: db.internal"),
            f"{PLACE}: host is a field of tcp, icmp or tls checks, not of http ones",
        ),
        (("kind: tcp", "kind: tcp, type: metric"), f"{PLACE}: only an endpoint has a check kind"),
    ],
)
def test_a_bad_tcp_field_is_refused_naming_its_place_and_reason(change, problem):
    with pytest.raises(ConfigError) as refused:
        configfile.load(FILE.replace(*change))

    assert problem in str(refused.value)


def test_pulse_check_tcp_sends_and_matches_the_reply():
    with TCPServer("echo") as server:
        address = f"127.0.0.1:{server.port}"
        passing = pulse("check", "--tcp", address, "--send", "ping", "-c", "[BODY] == pat(*ping*)", "--json")
        failing = pulse("check", "--tcp", address, "--send", "ping", "-c", "[BODY] == pong")

    report = json.loads(passing.stdout)
    assert passing.returncode == 0, passing.stderr
    assert (report["kind"], report["success"], report["status"], report["observed"]) == (
        "tcp",
        True,
        None,
        "OPERATIONAL",
    )
    assert [c["resolved"] for c in report["conditions"]] == ["[BODY] (echo: ping) == pat(*ping*)"]
    assert failing.returncode == 1
    assert failing.stdout.splitlines()[0] == "FAIL  [BODY] (echo: ping) == pong"


def test_pulse_check_tcp_reports_a_refused_port_and_refuses_bad_input():
    refused = pulse("check", "--tcp", f"127.0.0.1:{closed_port()}", "--json")
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["error"] == "connection refused by 127.0.0.1"

    wrong = pulse("check", "--tcp", "127.0.0.1:1", "-c", "[STATUS] == 200")
    assert (wrong.returncode, wrong.stderr) == (
        2,
        "pulse: [STATUS] == 200: [STATUS] is not a placeholder of tcp checks\n",
    )
    no_port = pulse("check", "--tcp", "db.internal")
    assert no_port.returncode == 2 and "expected HOST:PORT" in no_port.stderr
    both = pulse("check", "--tcp", "127.0.0.1:1", "--url", "http://127.0.0.1:1/")
    assert both.returncode == 2


def test_pulse_check_tcp_with_tls_verifies_against_the_system_store(certificates):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificates / "server.pem", certificates / "server.key")
    with TCPServer("echo", tls=context) as server:
        address = f"localhost:{server.port}"
        untrusted = pulse("check", "--tcp", address, "--tls", "--json")
        conditions = ("-c", "[BODY] == echo: hi")
        ca = {"SSL_CERT_FILE": str(certificates / "ca.pem")}  # the system store, as OpenSSL reads it
        trusted = pulse("check", "--tcp", address, "--tls", "--send", "hi", *conditions, "--json", **ca)

    assert untrusted.returncode == 1
    assert "certificate verify failed" in json.loads(untrusted.stdout)["error"]
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
