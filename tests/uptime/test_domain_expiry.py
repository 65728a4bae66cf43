"""Domain expiry warnings (`pulse.uptime.domains`, `pulse.uptime.rdap`) against a fake RDAP service
on loopback: one `HTTPTarget` answers IANA's bootstrap file (naming itself the RDAP server of
``.example``) and ``domain/NAME`` with the records the test sets. The components' host names are
resolved to 127.0.0.1 by a stand-in for the system resolver, so their checks reach a local target.
Warnings go through the real batch and record path to a fake webhook channel."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import socket
from datetime import UTC, datetime, timedelta

import pytest
from playhouse.migrations import Runner

from actors.uptime import checks
from pulse import configfile
from pulse.cleanup import retention
from pulse.config import get_settings
from pulse.db import MIGRATIONS_DIR, db
from pulse.errors import ConfigError
from pulse.models import Component, Event, Incident, UptimeCheck, utcnow
from pulse.models.event import DOMAIN_EXPIRING
from pulse.net import AddressPolicy
from pulse.notifications.render import render
from pulse.uptime import domains, rdap
from tests.support.migrations import database_at
from tests.support.target import HTTPTarget, closed_port

DAY = timedelta(days=1)
SLOT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
FILE = """
organizations:
  - slug: acme
    name: Acme
    channels:
      - {{key: ops, type: webhook, url: "{hook}"}}
    components:
{components}
"""
COMPONENT = (
    '      - {{key: {key}, name: {name}, url: "http://{host}:{port}/health", conditions: ["[STATUS] == 200"]{extra}}}'
)


class Registry:
    """The fake RDAP service: its bootstrap file's URL, the records it answers, the lookups made."""

    def __init__(self, target: HTTPTarget):
        self.target = target
        self.bootstrap_url = target.url("/dns.json")
        self.serve_bootstrap(target.url("/rdap/"))

    def serve_bootstrap(self, base: str) -> None:
        """IANA's file, naming ``base`` the RDAP server of .example and .test (RFC 9224)."""
        registry = {"version": "1.0", "services": [[["example", "test"], [base]]]}
        self.target.answer("/dns.json", body=json.dumps(registry).encode())

    def record(self, domain: str, expires: datetime | None, *, status: int = 200) -> None:
        """Answer ``domain``'s record: registered, last changed and expiring at ``expires``
        (RFC 9083 events; no expiration event when None), or ``status`` with no record."""
        events = [{"eventAction": "registration", "eventDate": "2001-04-01T00:00:00Z"}]
        if expires is not None:
            events.append({"eventAction": "expiration", "eventDate": expires.isoformat().replace("+00:00", "Z")})
        record = {"objectClassName": "domain", "ldhName": domain.upper(), "events": events}
        body = json.dumps(record).encode() if status == 200 else b'{"errorCode": %d}' % status
        self.target.answer(f"/rdap/domain/{domain}", status=status, body=body,
                           headers={"Content-Type": "application/rdap+json"})  # fmt: skip

    def lookups(self, path: str | None = None) -> list[str]:
        """The paths asked, in order (only ``path``'s when given)."""
        return [r.path for r in self.target.received if path is None or r.path == path]


@pytest.fixture
def registry(monkeypatch):
    with HTTPTarget() as target:
        found = Registry(target)
        configured = dataclasses.replace(get_settings(), rdap_bootstrap_url=found.bootstrap_url)
        monkeypatch.setattr(domains, "get_settings", lambda: configured)
        monkeypatch.setattr(rdap, "_bootstrap", {})  # no bootstrap file cached by another test
        yield found


@pytest.fixture
def names(monkeypatch):
    """Every name under .example resolves to 127.0.0.1."""
    resolve = socket.getaddrinfo

    def fake(host, *args, **kwargs):
        return resolve("127.0.0.1" if str(host).endswith(".example") else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)


def apply(hook, *components):
    """Apply a file with ``components``: (key, host, port, extra) each."""
    lines = [COMPONENT.format(key=key, name=key.upper(), host=host, port=port, extra=extra)
             for key, host, port, extra in components]  # fmt: skip
    configfile.apply(configfile.load(FILE.format(hook=hook, components="\n".join(lines))))


def check(component, n):
    checks.fn([[component.id, (SLOT + n * timedelta(seconds=30)).isoformat()]])


def expiry_of(domain):
    return db.execute_sql("SELECT expires_at, problem FROM domain_expiry WHERE domain = %s", (domain,)).fetchone()


def warnings():
    return [e.payload for e in Event.select().where(Event.type == DOMAIN_EXPIRING).order_by(Event.id)]


def later(monkeypatch, by):
    """Move the domains' clock ``by`` ahead."""
    monkeypatch.setattr(domains, "utcnow", lambda: utcnow() + by)


# --- the registered domain and the RDAP lookup ---------------------------------------------------


@pytest.mark.parametrize(
    "host, domain",
    [
        ("api.acme.example", "acme.example"),
        ("ACME.example.", "acme.example"),
        ("a.b.shop.acme.co.uk", "acme.co.uk"),
        ("acme.com.au", "acme.com.au"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("co.uk", None),
        ("localhost", None),
        ("192.0.2.7", None),
        ("2001:db8::1", None),
    ],
)
def test_the_registered_domain_of_a_host(host, domain):
    assert rdap.registered(host) == domain


def test_the_expiry_is_the_records_expiration_event(registry):
    expires = datetime(2027, 3, 14, 9, 26, 53, tzinfo=UTC)
    registry.record("acme.example", expires)
    found = rdap.expiry("acme.example", AddressPolicy(), registry.bootstrap_url)
    assert found == expires and found.tzinfo is not None
    [bootstrap, record] = registry.target.received
    assert (bootstrap.path, record.path) == ("/dns.json", "/rdap/domain/acme.example")
    assert record.headers["accept"].startswith("application/rdap+json")


@pytest.mark.parametrize(
    "setup, problem, answered",
    [
        (lambda r: None, "does not know it (404)", True),
        (lambda r: r.record("acme.example", None), "the registry's record has no expiration event", True),
        (lambda r: r.record("acme.example", None, status=503), "answered 503", False),
        (lambda r: r.serve_bootstrap(f"http://127.0.0.1:{closed_port()}/"), "127.0.0.1", False),
        (
            lambda r: r.target.answer("/dns.json", body=b'{"services": [[["test"], ["https://rdap.nic.test/"]]]}'),
            "names no server for .example",
            True,
        ),
    ],
    ids=["404", "no expiration event", "registry answers 503", "registry down", "no server for the TLD"],
)
def test_an_expiry_that_cannot_be_told_is_unknown(registry, setup, problem, answered):
    setup(registry)
    with pytest.raises(rdap.UnknownExpiryError, match=re.escape(problem)) as unknown:
        rdap.expiry("acme.example", AddressPolicy(), registry.bootstrap_url)
    assert unknown.value.answered is answered


def test_the_bootstrap_file_is_fetched_once_a_day(registry, monkeypatch):
    registry.record("acme.example", SLOT)
    registry.record("other.example", SLOT)
    for domain in ("acme.example", "other.example", "acme.example"):
        rdap.expiry(domain, AddressPolicy(), registry.bootstrap_url)
    assert len(registry.lookups("/dns.json")) == 1
    clock = rdap.time.monotonic() + rdap.BOOTSTRAP_TTL_S
    monkeypatch.setattr(rdap.time, "monotonic", lambda: clock)
    rdap.expiry("acme.example", AddressPolicy(), registry.bootstrap_url)
    assert len(registry.lookups("/dns.json")) == 2


# --- the cache ----------------------------------------------------------------------------------


def test_one_lookup_a_day_for_many_components_on_one_domain(database, registry, monkeypatch):
    expires = datetime(2027, 1, 1, tzinfo=UTC)
    registry.record("acme.example", expires)
    registry.record("other.example", expires + DAY)
    on = ", domain_warnings: [30d]"
    apply("https://hooks.acme.example/x", *[(f"c{n}", f"h{n}.acme.example", 80, on) for n in range(30)],
          ("shop", "shop.acme.example", 443, on), ("other", "www.other.example", 80, on),
          ("quiet", "www.quiet.example", 80, ""))  # fmt: skip
    assert Component.get(Component.key == "c7").domain == "acme.example"
    assert Component.get(Component.key == "quiet").domain is None  # no warnings: never looked up

    assert domains.refresh() == 2
    assert sorted(registry.lookups())[1:] == ["/rdap/domain/acme.example", "/rdap/domain/other.example"]
    assert expiry_of("acme.example") == (expires, None)
    assert domains.refresh() == 0  # within the day: nothing
    later(monkeypatch, 23 * timedelta(hours=1))
    assert domains.refresh() == 0
    later(monkeypatch, DAY + timedelta(minutes=1))
    assert domains.refresh() == 2
    assert len(registry.lookups("/rdap/domain/acme.example")) == 2
    assert len(registry.lookups("/dns.json")) == 1  # the bootstrap file is cached in the process


def test_a_refresh_looks_up_a_few_domains_the_oldest_first(database, registry):
    apply("https://hooks.acme.example/x",
          *[(f"c{n}", f"www.d{n}.example", 80, ", domain_warnings: [7d]") for n in range(5)])  # fmt: skip
    assert domains.refresh(limit=3) == 3
    assert domains.refresh(limit=3) == 2  # the two left
    assert domains.refresh(limit=3) == 0


def test_an_unknown_expiry_is_logged_once_without_a_traceback(database, registry, caplog, monkeypatch):
    apply("https://hooks.acme.example/x", ("api", "api.acme.example", 80, ", domain_warnings: [30d]"))
    registry.record("acme.example", SLOT + 10 * DAY)
    domains.refresh()
    registry.record("acme.example", None, status=503)  # the registry falls over
    later(monkeypatch, DAY)
    with caplog.at_level(logging.WARNING, logger="pulse.uptime.domains"):
        assert domains.refresh() == 1
    [line] = caplog.records
    assert line.levelname == "WARNING" and line.exc_info is None
    assert line.getMessage() == (
        f"Domain expiry of acme.example unknown: 127.0.0.1:{registry.target.port} answered 503;"
        " asked again in an hour, the expiry known before kept."
    )
    assert expiry_of("acme.example") == (SLOT + 10 * DAY, f"127.0.0.1:{registry.target.port} answered 503")  # kept
    later(monkeypatch, DAY + timedelta(minutes=50))
    assert domains.refresh() == 0
    later(monkeypatch, DAY + timedelta(minutes=61))
    assert domains.refresh() == 1  # asked again an hour later

    registry.record("acme.example", None, status=404)  # then forgets the domain: unknown
    later(monkeypatch, 2 * DAY + timedelta(hours=2))
    assert domains.refresh() == 1
    assert expiry_of("acme.example") == (None, f"127.0.0.1:{registry.target.port} does not know it (404)")


# --- warnings through the record path -----------------------------------------------------------


def test_a_domain_warns_once_per_threshold_and_is_no_outage(database, registry, names, vendors, notify, monkeypatch):
    expires = (utcnow() + 20 * DAY + timedelta(hours=1)).replace(microsecond=0)
    registry.record("acme.example", expires)
    with HTTPTarget() as site:
        site.answer("/health", body=b"ok")
        apply(vendors.webhook_receiver(), ("api", "api.acme.example", site.port, ", domain_warnings: [30d, 7d]"),
              ("www", "www.acme.example", site.port, ""))  # fmt: skip
        api, www = Component.get(Component.key == "api"), Component.get(Component.key == "www")
        check(api, 0)  # not looked up yet: nothing to warn of
        assert warnings() == []
        domains.refresh()
        for n in range(1, 4):
            check(api, n)
            check(www, n)
        check(api, 3)  # the last batch, delivered again
        assert [(w["threshold_days"], w["days_left"]) for w in warnings()] == [(30, 20)]
        later(monkeypatch, 14 * DAY)
        domains.refresh()  # looked up again: the same expiry
        check(api, 4)
        check(api, 5)
        delivered = notify()

    assert warnings() == [
        {"component": {"key": "api", "name": "API"}, "domain": "acme.example", "expires_at": expires.isoformat(),
         "days_left": 20, "threshold_days": 30},
        {"component": {"key": "api", "name": "API"}, "domain": "acme.example", "expires_at": expires.isoformat(),
         "days_left": 6, "threshold_days": 7},
    ]  # fmt: skip
    assert len(registry.lookups("/rdap/domain/acme.example")) == 2
    assert [(d["type"], d["severity"], d["title"]) for d in delivered] == [
        ("domain.expiring", "warning", "Domain expiring: acme.example")
    ] * 2
    assert delivered[1]["summary"] == (
        f"The registration of acme.example (API) expires in 6 days, on {expires:%Y-%m-%d %H:%M} UTC "
        "(the 7 days warning). Renew it before then."
    )
    assert UptimeCheck.select().where(~UptimeCheck.success).count() == 0
    assert Component.get_by_id(api.id).status == "OPERATIONAL" and Incident.select().count() == 0
    rows = db.execute_sql("SELECT component_id, threshold_days FROM domain_warning ORDER BY 2").fetchall()
    assert rows == [(api.id, 7), (api.id, 30)]  # www has no domain warnings


def test_a_renewal_warns_anew_and_an_unknown_expiry_warns_of_nothing(database, registry, names, vendors):
    soon = (utcnow() + 5 * DAY).replace(microsecond=0)
    with HTTPTarget() as site:
        site.answer("/health", body=b"ok")
        apply(vendors.webhook_receiver(), ("api", "api.acme.example", site.port, ", domain_warnings: [7d]"))
        api = Component.get()
        domains.refresh()  # 404: unknown
        check(api, 0)
        assert warnings() == [] and expiry_of("acme.example")[0] is None
        registry.record("acme.example", soon)
        db.execute_sql("UPDATE domain_expiry SET checked_at = checked_at - interval '1 day'")
        domains.refresh()
        check(api, 1)
        registry.record("acme.example", soon + 365 * DAY)  # renewed: a year out
        db.execute_sql("UPDATE domain_expiry SET checked_at = checked_at - interval '1 day'")
        domains.refresh()
        check(api, 2)
        db.execute_sql("UPDATE domain_expiry SET expires_at = %s", (soon + DAY,))  # another renewal, a short one
        check(api, 3)
    assert [w["expires_at"] for w in warnings()] == [soon.isoformat(), (soon + DAY).isoformat()]


def test_an_expired_domain_reads_as_expired():
    payload = {"component": {"key": "api", "name": "API"}, "domain": "acme.example",
               "expires_at": (SLOT - DAY).isoformat(), "days_left": -1, "threshold_days": 7}  # fmt: skip
    notice = render(1, DOMAIN_EXPIRING, payload, SLOT, "Acme", None)
    assert notice.summary.startswith("The registration of acme.example (API) has expired, on 2026-11-29 12:00 UTC")


# --- the configuration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "component, reason",
    [
        (
            '{key: a, name: A, url: "http://192.0.2.7/", domain_warnings: [7d]}',
            "domain_warnings: 192.0.2.7 is an IP address, which has no domain to expire",
        ),
        (
            '{key: a, name: A, kind: tcp, host: "2001:db8::1", port: 22, domain_warnings: [7d]}',
            "domain_warnings: 2001:db8::1 is an IP address",
        ),
        (
            "{key: a, name: A, kind: tls, host: localhost, port: 443, domain_warnings: [7d]}",
            "domain_warnings: localhost has no registered domain",
        ),
        (
            "{key: a, name: A, kind: dns, query: acme.example, domain_warnings: [7d]}",
            "domain_warnings are for http, tcp or tls checks, not dns ones",
        ),
        (
            "{key: a, name: A, kind: icmp, host: acme.example, domain_warnings: [7d]}",
            "domain_warnings are for http, tcp or tls checks, not icmp ones",
        ),
        ("{key: a, name: A, type: service, domain_warnings: [7d]}", "only an endpoint has domain_warnings"),
        (
            '{key: a, name: A, url: "https://acme.example/", domain_warnings: [36h]}',
            "36h is not a whole number of days",
        ),
        (
            '{key: a, name: A, url: "https://acme.example/", domain_warnings: [7d, 7d]}',
            "the same number of days is given twice",
        ),
        ('{key: a, name: A, url: "https://acme.example/", domain_warnings: [400d]}', "must be between 1d and 365d"),
    ],
)
def test_bad_domain_warnings_are_refused_naming_the_reason(database, component, reason):
    text = FILE.format(hook="https://hooks.acme.example/x", components=f"      - {component}")
    with pytest.raises(ConfigError) as refused:
        configfile.apply(configfile.load(text))
    assert reason in str(refused.value)
    assert Component.select().count() == 0


def test_subscribers_cannot_take_domain_warnings(database):
    text = """
organizations:
  - slug: acme
    name: Acme
    subscribers:
      - {email: alice@acme.example, events: [domain.expiring]}
"""
    with pytest.raises(ConfigError, match=r"domain\.expiring is for the organization's channels"):
        configfile.load(text)


def test_turning_domain_warnings_off_stops_the_lookups(database, registry):
    apply("https://hooks.acme.example/x", ("api", "api.acme.example", 80, ", domain_warnings: [7d]"))
    assert Component.get().domain_warning_days == [7]
    apply("https://hooks.acme.example/x", ("api", "api.acme.example", 80, ""))
    assert (Component.get().domain, Component.get().domain_warning_days) == (None, [])
    assert domains.refresh() == 0 and registry.lookups() == []


def test_the_cleanup_drops_warnings_of_domains_expired_a_while(database):
    apply("https://hooks.acme.example/x", ("api", "api.acme.example", 80, ", domain_warnings: [7d]"))
    component, now = Component.get(), utcnow()
    db.execute_sql(
        "INSERT INTO domain_warning VALUES (%s, %s, 7, %s), (%s, %s, 7, %s)",
        (component.id, now - 31 * DAY, now, component.id, now - 29 * DAY, now),
    )
    report = retention.clean(now, dead_letters=timedelta(days=30))
    [found] = [f for f in report.tables if f.table == "domain_warning"]
    assert found.rows == 1
    assert db.execute_sql("SELECT expires_at FROM domain_warning").fetchall() == [(now - 29 * DAY,)]
    Component.delete().execute()
    assert db.execute_sql("SELECT count(*) FROM domain_warning").fetchone() == (0,)


def test_migration_0024_adds_the_columns_and_tables_and_goes_back(settings):
    with database_at(settings, "0023_certificate_warnings", "_domain_expiry") as old:
        db.execute_sql("INSERT INTO organization (slug, name) VALUES ('acme', 'Acme')")
        db.execute_sql("INSERT INTO component (organization_id, key, name, url) VALUES (1, 'api', 'API', 'https://x')")
        runner = Runner(old, MIGRATIONS_DIR)
        assert runner.up("0024_domain_expiry")[-1] == "0024_domain_expiry"
        assert db.execute_sql("SELECT domain_warning_days, domain FROM component").fetchall() == [([], None)]
        db.execute_sql("INSERT INTO domain_expiry (domain, checked_at) VALUES ('acme.example', now())")
        db.execute_sql("INSERT INTO domain_warning VALUES (1, now(), 7, now())")
        assert runner.down() == ["0024_domain_expiry"]
        tables = "SELECT count(*) FROM pg_tables WHERE tablename IN ('domain_expiry', 'domain_warning')"
        assert db.execute_sql(tables).fetchone() == (0,)
        assert runner.up("0024_domain_expiry")[-1] == "0024_domain_expiry"
