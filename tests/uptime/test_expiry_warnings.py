"""Certificate expiry warnings (`pulse.uptime.expiry`) through the real batch and record path: a
local TLS server presents a certificate of the test CA expiring when the test says, the component
is checked through `actors.uptime.checks`, and the warnings reach a fake webhook channel through
the notifications actors. Once per threshold and certificate, never an outage."""

import ssl
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509

from actors.uptime import checks
from pulse import configfile
from pulse.cleanup import retention
from pulse.db import db
from pulse.errors import ConfigError
from pulse.models import Component, Event, Incident, NotificationChannel, UptimeCheck, utcnow
from pulse.models.event import CERTIFICATE_EXPIRING
from pulse.net import Response, dial
from pulse.notifications import delivery
from pulse.notifications.render import render
from pulse.uptime import batch, expiry, record
from tests.conftest import HEALTHY
from tests.support.certs import Authority
from tests.support.target import HTTPTarget
from tests.support.tcpserver import TCPServer
from tests.support.wait import wait_for

DAY = timedelta(days=1)
SLOT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
FILE = """
organizations:
  - slug: acme
    name: Acme
    channels:
      - {{key: ops, type: webhook, url: "{hook}"}}
    components:
      - {{key: api, name: Public API, kind: tcp, host: localhost, port: {port}, tls: true{extra}}}
"""


class Certificates:
    """Server certificates for 127.0.0.1 and localhost that a test CA signs, each expiring when the
    test asks; `context` serves one."""

    def __init__(self, authority: Authority):
        self.authority = authority

    def context(self, expires_in: timedelta) -> tuple[ssl.SSLContext, datetime]:
        """A server-side TLS context presenting a certificate that expires ``expires_in`` from now,
        and its notAfter (to the second, as certificates say)."""
        pem, key = self.authority.leaf(["localhost", "127.0.0.1"], days=expires_in / DAY)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(pem, key)
        return context, x509.load_pem_x509_certificate(pem.read_bytes()).not_valid_after_utc


@pytest.fixture
def certs(tmp_path, monkeypatch):
    """Certificates to serve; the checks trust their CA as the system's store (``verify: true``)."""
    authority = Authority(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.pem))
    monkeypatch.setattr(dial, "_contexts", {})  # made again, reading SSL_CERT_FILE
    return Certificates(authority)


def apply(server, vendors, extra=""):
    configfile.apply(configfile.load(FILE.format(hook=vendors.webhook_receiver(), port=server.port, extra=extra)))
    return Component.get()


def check(component, n):
    """Check the component for its n-th slot, as the scheduling loop's batch does."""
    checks.fn([[component.id, (SLOT + n * timedelta(seconds=30)).isoformat()]])


def warnings():
    return [e.payload for e in Event.select().where(Event.type == CERTIFICATE_EXPIRING).order_by(Event.id)]


def later(monkeypatch, by):
    """Move the warnings' clock ``by`` ahead (the certificate, meanwhile, stays what it is)."""
    monkeypatch.setattr(expiry, "utcnow", lambda: utcnow() + by)


def test_a_certificate_two_days_from_expiry_warns_once_and_is_no_outage(database, certs, vendors, notify):
    context, not_after = certs.context(2 * DAY + timedelta(hours=1))
    with TCPServer("echo", tls=context) as server:
        component = apply(server, vendors)
        for n in range(5):
            check(component, n)
        check(component, 4)  # the last batch, delivered again
        delivered = notify()
        # The server counts a handshake once its thread has read the client's Finished, which may
        # come after the check, done once it sent it (TLS 1.3), was recorded.
        wait_for(lambda: server.accepted == 5, "the five handshakes counted")

    assert UptimeCheck.select().count() == 5
    [payload] = warnings()
    assert payload == {
        "component": {"key": "api", "name": "Public API"},
        "host": "localhost",
        "not_after": not_after.isoformat(),
        "days_left": 2,
        "threshold_days": 3,  # the smallest crossed: one warning, not one at 14 and one at 3
    }
    [sent] = delivered  # one delivery attempt in all
    assert (sent["type"], sent["severity"], sent["title"]) == (
        "certificate.expiring",
        "warning",
        "Certificate expiring: Public API",
    )
    assert sent["summary"] == (
        f"The TLS certificate of localhost expires in 2 days, on {not_after:%Y-%m-%d %H:%M} UTC "
        "(the 3 days warning). Renew it before then."
    )
    assert sent["component"]["status"] is None  # not a status change
    component = Component.get_by_id(component.id)
    assert (component.status, component.consecutive_failures) == ("OPERATIONAL", 0)
    assert Incident.select().count() == 0
    rows = db.execute_sql("SELECT threshold_days FROM certificate_warning ORDER BY 1").fetchall()
    assert rows == [(3,), (14,)]  # 14 claimed with it: it will not warn later


def test_a_certificate_warns_at_each_threshold_as_it_comes(database, certs, vendors, notify, monkeypatch):
    context, _ = certs.context(10 * DAY + timedelta(hours=1))
    with TCPServer("echo", tls=context) as server:
        component = apply(server, vendors)
        check(component, 0)
        check(component, 1)
        assert [(w["threshold_days"], w["days_left"]) for w in warnings()] == [(14, 10)]
        later(monkeypatch, 8 * DAY)  # the same certificate, 8 days on
        check(component, 2)
        check(component, 3)
        delivered = notify()

    assert [(w["threshold_days"], w["days_left"]) for w in warnings()] == [(14, 10), (3, 2)]
    # Two notifications, delivered in either order.
    first, second = sorted(delivered, key=lambda d: "14 days warning" not in d["summary"])
    assert "14 days warning" in first["summary"] and "14 days warning" not in second["summary"]
    assert "in 2 days" in second["summary"] and "the 3 days warning" in second["summary"]


def test_a_renewed_certificate_warns_anew(database, certs, vendors, notify, monkeypatch):
    old, expiring = certs.context(2 * DAY + timedelta(hours=1))
    renewed, renewed_at = certs.context(60 * DAY + timedelta(hours=1))
    with TCPServer("echo", tls=old) as server:
        component = apply(server, vendors)
        check(component, 0)
        server.tls = renewed  # the next handshakes present the renewed certificate
        check(component, 1)
        assert len(warnings()) == 1  # 60 days out: nothing yet
        later(monkeypatch, 50 * DAY)
        check(component, 2)
        check(component, 3)
        server.tls = old  # a server behind the balancer still on the old one: warned already
        check(component, 4)
        delivered = notify()

    assert [(w["not_after"], w["threshold_days"]) for w in warnings()] == [
        (expiring.isoformat(), 3),
        (renewed_at.isoformat(), 14),
    ]
    assert len(delivered) == 2


def test_https_checks_warn_too(database, certs, vendors, notify):
    context, not_after = certs.context(5 * DAY + timedelta(hours=1))
    with HTTPTarget(tls=context) as target:
        target.answer("/health", body=HEALTHY, headers={"Content-Type": "application/json"})
        text = FILE.replace("kind: tcp, host: localhost, port: {port}, tls: true", 'url: "{url}"')
        url = target.url("/health").replace("127.0.0.1", "localhost")
        configfile.apply(configfile.load(text.format(hook=vendors.webhook_receiver(), url=url, extra="")))
        component = Component.get()
        check(component, 0)
        check(component, 1)
        delivered = notify()

    [payload] = warnings()
    assert (payload["host"], payload["not_after"]) == ("localhost", not_after.isoformat())
    assert payload["threshold_days"] == 14
    assert len(delivered) == 1 and UptimeCheck.get().success


def test_tls_checks_warn_too(database, certs, vendors, notify):
    context, not_after = certs.context(20 * DAY)
    with TCPServer("echo", tls=context) as server:
        text = FILE.replace(", tls: true{extra}", ", certificate_warnings: [30d]{extra}").replace(
            "kind: tcp", "kind: tls"
        )
        configfile.apply(configfile.load(text.format(hook=vendors.webhook_receiver(), port=server.port, extra="")))
        component = Component.get()
        check(component, 0)
        check(component, 1)
        delivered = notify()

    [payload] = warnings()
    assert (payload["not_after"], payload["days_left"], payload["threshold_days"]) == (not_after.isoformat(), 19, 30)
    assert len(delivered) == 1 and UptimeCheck.select().where(UptimeCheck.success).count() == 2


def test_one_slot_recorded_by_two_workers_warns_once(database, certs, vendors):
    """Two workers that checked the same slot (a message redelivered while the first still ran)
    both record: the check row and the warning are each written once."""
    context, _ = certs.context(2 * DAY + timedelta(hours=1))
    with TCPServer("echo", tls=context) as server:
        component = apply(server, vendors)
        loaded = record.load(component.id, SLOT)
        first, second = loaded.run(batch._policy()), loaded.run(batch._policy())
    with db.atomic():
        assert len(record.record_all([(loaded, SLOT, first)])) == 1
    with db.atomic():
        assert record.record_all([(loaded, SLOT, second)]) == []
    assert len(warnings()) == 1 and UptimeCheck.select().count() == 1


@pytest.mark.parametrize("slots", [(0, 0), (0, 1)], ids=["one slot", "two slots"])
def test_checks_recorded_at_once_by_two_workers_warn_once(database, certs, vendors, slots):
    """Two workers commit checks of one certificate at the same moment (one slot twice, or two
    slots): the claim of the warning is taken by one of them."""
    context, _ = certs.context(2 * DAY + timedelta(hours=1))
    with TCPServer("echo", tls=context) as server:
        component = apply(server, vendors)
        times = [SLOT + n * timedelta(seconds=30) for n in slots]
        loaded = [record.load(component.id, at) for at in times]
        results = [each.run(batch._policy()) for each in loaded]
    start = threading.Barrier(2)

    def finish(n):
        start.wait()
        try:
            with db.atomic():
                return record.record_all([(loaded[n], times[n], results[n])])
        finally:
            db.close()

    with ThreadPoolExecutor(2) as pool:
        written = [event for events in pool.map(finish, (0, 1)) for event in events]

    assert len(written) == 1 and len(warnings()) == 1
    assert UptimeCheck.select().count() == len(set(slots))


@pytest.mark.parametrize("extra", [", certificate_warnings: []", ", tls: false"])
def test_no_warnings_when_turned_off_or_without_tls(database, certs, vendors, extra):
    context, _ = certs.context(2 * DAY + timedelta(hours=1))
    with TCPServer("echo", tls=context if "certificate" in extra else None) as server:
        text = FILE.replace(", tls: true", "") if "tls: false" in extra else FILE
        configfile.apply(configfile.load(text.format(hook=vendors.webhook_receiver(), port=server.port, extra=extra)))
        component = Component.get()
        check(component, 0)
    assert UptimeCheck.get().success and warnings() == []


def test_the_thresholds_are_the_components(database, certs, vendors):
    context, _ = certs.context(20 * DAY + timedelta(hours=1))
    with TCPServer("echo", tls=context) as server:
        component = apply(server, vendors, extra=", certificate_warnings: [7d, 30d]")
        assert Component.get_by_id(component.id).certificate_warning_days == [30, 7]
        check(component, 0)
    assert [w["threshold_days"] for w in warnings()] == [30]


@pytest.mark.parametrize(
    "setting, reason",
    [
        ("[36h]", "36h is not a whole number of days (write e.g. 14d)"),
        ("[0d]", "must be between 1d and 365d, not 0d"),
        ("[400d]", "must be between 1d and 365d, not 400d"),
        ("[14d, 3d, 14d]", "the same number of days is given twice"),
        ("[1d, 2d, 3d, 4d, 5d, 6d]", "at most 5 items"),
        ("[soon]", "'soon' is not a duration"),
        ("14d", "should be a valid list"),
    ],
)
def test_bad_thresholds_are_refused_naming_the_place(database, setting, reason):
    text = FILE.format(hook="https://hooks.acme.example/x", port=443, extra=f", certificate_warnings: {setting}")
    with pytest.raises(ConfigError) as refused:
        configfile.apply(configfile.load(text))
    assert "certificate_warnings" in str(refused.value) and reason in str(refused.value)
    assert Component.select().count() == 0


def test_only_an_endpoint_has_certificate_warnings(database):
    text = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {key: web, name: Web, type: service, certificate_warnings: [3d]}
"""
    with pytest.raises(ConfigError, match="only an endpoint has certificate_warnings"):
        configfile.load(text)


def test_subscribers_cannot_take_the_warnings(database):
    text = """
organizations:
  - slug: acme
    name: Acme
    subscribers:
      - {email: alice@acme.example, events: [certificate.expiring]}
"""
    with pytest.raises(ConfigError, match=r"certificate\.expiring is for the organization's channels"):
        configfile.load(text)


def test_a_channel_listing_other_events_does_not_get_them(database, certs, vendors):
    context, _ = certs.context(2 * DAY + timedelta(hours=1))
    with TCPServer("echo", tls=context) as server:
        component = apply(server, vendors)
        NotificationChannel.update(events=["incident.opened"]).execute()
        check(component, 0)
    [event] = Event.select().where(Event.type == CERTIFICATE_EXPIRING)
    assert delivery.broadcast(event.id) == []
    NotificationChannel.update(events=["incident.opened", CERTIFICATE_EXPIRING]).execute()
    assert len(delivery.broadcast(event.id)) == 1


def test_an_expired_certificate_reads_as_expired():
    payload = expiry.warning("api", "API", "api.acme.example", SLOT - DAY, 3, SLOT)
    notice = render(1, CERTIFICATE_EXPIRING, payload, SLOT, "Acme", None)
    assert payload["days_left"] == -1
    assert notice.summary.startswith("The TLS certificate of api.acme.example has expired, on 2026-11-29 12:00 UTC")


def test_the_cleanup_drops_warnings_of_certificates_expired_a_while(database, certs, vendors):
    context, _ = certs.context(2 * DAY)
    with TCPServer("echo", tls=context) as server:
        component = apply(server, vendors)
    now = utcnow()
    db.execute_sql(
        "INSERT INTO certificate_warning VALUES (%s, %s, 3, %s), (%s, %s, 3, %s)",
        (component.id, now - 31 * DAY, now, component.id, now - 29 * DAY, now),
    )
    report = retention.clean(now, dead_letters=timedelta(days=30))
    [found] = [f for f in report.tables if f.table == "certificate_warning"]
    assert found.rows == 1
    [(left,)] = db.execute_sql("SELECT not_after FROM certificate_warning").fetchall()
    assert left == now - 29 * DAY
    Component.delete().execute()
    assert db.execute_sql("SELECT count(*) FROM certificate_warning").fetchone() == (0,)


def test_a_certificate_far_from_its_thresholds_asks_the_database_nothing():
    far = Response(certificate_not_after=utcnow() + 20 * DAY)
    assert not expiry.due(far, 14) and expiry.due(far, 30)
    assert not expiry.due(Response(), 365) and not expiry.due(far, 0)
