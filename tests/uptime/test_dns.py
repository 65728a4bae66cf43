"""The dns check kind (`pulse.uptime.kinds.dns`) against a real local DNS server
(`tests.support.dnsserver`): each record type, NXDOMAIN, SERVFAIL, a truncated UDP reply asked again
over TCP, a resolver that never answers, datagrams that are not the reply, CNAME chains (followed,
and refused when they loop, run long or lead nowhere), the address policy (no packet to a refused
resolver, the system's resolvers included), the configuration file, the batch path and `pulse
check --dns`."""

import json
import time
from datetime import UTC, datetime, timedelta

import dns.query
import pytest

from actors.uptime import checks
from pulse import configfile
from pulse.components.status import DEGRADED, MAJOR_OUTAGE, OPERATIONAL
from pulse.errors import ConfigError
from pulse.models import Component, Incident, IncidentUpdate, UptimeCheck
from pulse.net import AddressPolicy
from pulse.uptime.kinds import KINDS
from pulse.uptime.kinds import dns as kind
from pulse.uptime.kinds.dns import Target, run
from tests.support.cli import pulse
from tests.support.dnsserver import DNSServer

DEFAULT = AddressPolicy()  # loopback allowed, as by default (PULSE_ALLOW_PRIVATE_TARGETS)
NO_PRIVATE = AddressPolicy(allow_private=False)
BIG = [f'"spf-include-{n:02} v=spf1 include:_spf{n}.acme.test ~all"' for n in range(30)]  # > 512 bytes
ZONE = {
    ("acme.test.", "A"): ["192.0.2.10", "192.0.2.9"],
    ("acme.test.", "AAAA"): ["2001:db8::10"],
    ("acme.test.", "MX"): ["20 backup.acme.test.", "10 mail.acme.test."],
    ("acme.test.", "TXT"): ['"v=spf1 mx -all"'],
    ("acme.test.", "NS"): ["ns1.acme.test.", "ns2.acme.test."],
    ("acme.test.", "SOA"): ["ns1.acme.test. hostmaster.acme.test. 2026120501 7200 3600 1209600 300"],
    ("www.acme.test.", "CNAME"): ["acme.test."],
    ("big.acme.test.", "TXT"): BIG,
    ("loop.acme.test.", "CNAME"): ["b.acme.test."],
    ("b.acme.test.", "CNAME"): ["loop.acme.test."],
    ("spf.acme.test.", "CNAME"): ["big.acme.test."],  # which has no A record
    ("shop.acme.test.", "CNAME"): ["shops.elsewhere.test."],  # out of the zone
    ("old.acme.test.", "CNAME"): ["removed.acme.test."],  # not in the zone: NXDOMAIN
    ("hop9.acme.test.", "A"): ["192.0.2.99"],
} | {(f"hop{n}.acme.test.", "CNAME"): [f"hop{n + 1}.acme.test."] for n in range(9)}  # hop0 → … → hop9


@pytest.fixture
def server():
    with DNSServer(ZONE, origin="acme.test.", servfail=("broken.acme.test.",)) as running:
        yield running


@pytest.fixture
def tripwire(monkeypatch):
    """Every socket dnspython would open, recorded and refused: a test that uses it proves that
    no packet was sent."""
    opened = []

    def refuse(*args):
        opened.append(args)
        raise AssertionError("a socket was opened")

    monkeypatch.setattr(dns.query, "socket_factory", refuse)
    return opened


def at(server, query, record="A", timeout_s=2.0):
    return Target(query, record, ("127.0.0.1", server.port), timeout_s)


def check(target, conditions=(), policy=DEFAULT, extract=None):
    return run(target, list(conditions), extract or {}, policy)


def test_it_is_the_registry_entry_of_dns():
    assert KINDS["dns"].run is run
    assert KINDS["dns"].placeholders == {"[DNS_RCODE]", "[BODY]", "[RESPONSE_TIME]"}
    assert "[DNS_RCODE]" not in KINDS["http"].placeholders | KINDS["tcp"].placeholders


@pytest.mark.parametrize(
    ("record", "body"),
    [
        ("A", "192.0.2.9\n192.0.2.10"),  # canonical order: numeric
        ("AAAA", "2001:db8::10"),
        ("MX", "10 mail.acme.test.\n20 backup.acme.test."),  # by preference
        ("TXT", '"v=spf1 mx -all"'),
        ("NS", "ns1.acme.test.\nns2.acme.test."),
        ("SOA", "ns1.acme.test. hostmaster.acme.test. 2026120501 7200 3600 1209600 300"),
    ],
)
def test_each_record_type_is_answered_one_record_a_line(server, record, body):
    result = check(at(server, "acme.test", record))

    assert (result.success, result.error, result.seen) == (True, None, OPERATIONAL), result.reason
    assert result.response.text == body
    assert (result.response.dns_rcode, result.response.status, result.response.ip) == ("NOERROR", None, "127.0.0.1")
    assert result.results[0].resolved == "[DNS_RCODE] (NOERROR) == NOERROR"  # the default condition
    assert server.seen("udp") == [("acme.test.", record)]


def test_an_alias_answers_the_records_it_leads_to_and_a_cname_query_the_alias(server):
    followed = check(at(server, "www.acme.test"), ["[BODY] == pat(*192.0.2.10*)"])
    alias = check(at(server, "www.acme.test", "CNAME"), ["[BODY] == acme.test."])

    assert followed.success and followed.response.text == "192.0.2.9\n192.0.2.10", followed.reason
    assert alias.success, alias.reason


def test_a_chain_of_eight_cnames_answers_the_records_at_its_end(server):
    result = check(at(server, "hop1.acme.test"), ["[BODY] == 192.0.2.99"])

    assert (result.success, result.error) == (True, None), result.reason


@pytest.mark.parametrize(
    ("query", "record", "problem"),
    [
        (
            "loop.acme.test",
            "A",
            "the CNAME chain of loop.acme.test. loops: loop.acme.test. → b.acme.test. → loop.acme.test.",
        ),
        ("b.acme.test", "MX", "the CNAME chain of b.acme.test. loops: b.acme.test. → loop.acme.test. → b.acme.test."),
        (
            "hop0.acme.test",
            "A",
            "the CNAME chain of hop0.acme.test. is longer than 8 CNAMEs: "
            + " → ".join(f"hop{n}.acme.test." for n in range(10)),
        ),
        (
            "spf.acme.test",
            "A",
            "the CNAME chain of spf.acme.test. leads nowhere: big.acme.test. has no A record in the answer",
        ),
        (
            "shop.acme.test",
            "AAAA",
            "the CNAME chain of shop.acme.test. leads nowhere: shops.elsewhere.test. has no AAAA record in the answer",
        ),
    ],
    ids=["loop", "loop-from-b", "long", "nowhere", "out-of-zone"],
)
def test_a_cname_chain_that_loops_runs_long_or_leads_nowhere_is_an_error(server, query, record, problem):
    result = check(at(server, query, record))

    assert (result.error, result.seen) == (problem, MAJOR_OUTAGE)
    assert (result.response.connected, result.response.dns_rcode, result.response.text) == (True, "NOERROR", "")
    assert result.results[0].resolved == "[DNS_RCODE] (NOERROR) == NOERROR"  # the reply is still read


def test_a_cname_query_of_a_looping_alias_answers_the_alias(server):
    result = check(at(server, "loop.acme.test", "CNAME"), ["[BODY] == b.acme.test."])

    assert (result.success, result.error) == (True, None), result.reason


def test_a_chain_ending_at_a_name_that_does_not_exist_is_nxdomain_and_no_error(server):
    result = check(at(server, "old.acme.test"))

    assert (result.error, result.response.dns_rcode, result.response.text) == (None, "NXDOMAIN", "")
    assert result.reason == "[DNS_RCODE] (NXDOMAIN) == NOERROR"


def test_an_authoritative_server_leaves_a_chain_out_of_its_zone_to_others():
    with DNSServer(ZONE, origin="acme.test.", recursive=False) as server:
        leaving = check(at(server, "shop.acme.test"))
        looping = check(at(server, "loop.acme.test"))

    assert (leaving.success, leaving.error, leaving.response.text) == (True, None, ""), leaving.reason
    assert looping.error is not None and looping.error.startswith("the CNAME chain of loop.acme.test. loops")


def test_the_body_conditions_read_the_answer(server):
    result = check(
        at(server, "acme.test.", "MX"),
        ["[BODY] == pat(*mail.acme.test.*)", "[BODY] != pat(*other*)", "len([BODY]) > 10", "[RESPONSE_TIME] < 2000"],
    )
    failing = check(at(server, "acme.test", "MX"), ["[BODY] == 10 mail.acme.test."])

    assert result.success, result.reason
    assert (failing.success, failing.seen, failing.error) == (False, MAJOR_OUTAGE, None)
    assert failing.reason == "[BODY] (10 mail.acme.test.\n20 backup.acme.test.) == 10 mail.acme.test."


def test_a_name_that_does_not_exist_fails_the_rcode_condition_and_is_no_error(server):
    result = check(at(server, "nope.acme.test"), ["[DNS_RCODE] == NOERROR"])
    expected = check(at(server, "nope.acme.test"), ["[DNS_RCODE] == NXDOMAIN", "len([BODY]) == 0"])

    assert (result.success, result.error, result.seen) == (False, None, MAJOR_OUTAGE)
    assert result.reason == "[DNS_RCODE] (NXDOMAIN) == NOERROR"
    assert expected.success, expected.reason


def test_servfail_is_a_response_code(server):
    result = check(at(server, "broken.acme.test"))

    assert (result.error, result.response.dns_rcode, result.seen) == (None, "SERVFAIL", MAJOR_OUTAGE)
    assert result.reason == "[DNS_RCODE] (SERVFAIL) == NOERROR"


def test_a_name_without_records_of_the_type_is_noerror_with_an_empty_answer(server):
    result = check(at(server, "big.acme.test", "MX"), ["[DNS_RCODE] == NOERROR", "[BODY] == pat(*mail*)"])

    assert (result.error, result.response.dns_rcode, result.response.text) == (None, "NOERROR", "")
    assert [r.success for r in result.results] == [True, False]


def test_a_truncated_udp_reply_is_asked_again_over_tcp(server):
    result = check(at(server, "big.acme.test", "TXT"), ["[BODY] == pat(*spf-include-29*)"])

    assert (result.success, result.error) == (True, None), result.reason
    assert result.response.text.splitlines() == sorted(BIG)
    assert server.seen("udp") == [("big.acme.test.", "TXT")]
    assert server.seen("tcp") == [("big.acme.test.", "TXT")]  # the full answer came over TCP


def test_a_resolver_that_never_answers_is_an_outage_after_the_timeout():
    with DNSServer(silent=True) as silent:
        started = time.monotonic()
        result = check(at(silent, "acme.test", timeout_s=0.5))
        took = time.monotonic() - started

    assert 0.5 <= took < 3
    assert result.error == f"timed out after 0.5 s: no answer from resolver 127.0.0.1:{silent.port}"
    assert (result.success, result.seen, result.response.dns_rcode) == (False, MAJOR_OUTAGE, None)
    assert result.results[0].resolved == "[DNS_RCODE] () == NOERROR"
    assert silent.seen("udp") == [("acme.test.", "A")]  # it was asked


@pytest.mark.parametrize("decoy", ["wrong id", "other port", "malformed"])
def test_a_datagram_that_is_not_the_reply_is_passed_over(decoy):
    with DNSServer(ZONE, decoys=(decoy,)) as server:
        result = check(at(server, "acme.test"), ["[BODY] == pat(*192.0.2.10*)"])

    assert (result.success, result.error, result.response.dns_rcode) == (True, None, "NOERROR"), result.reason
    assert result.response.text == "192.0.2.9\n192.0.2.10"  # not the decoy's NXDOMAIN
    assert server.seen("udp") == [("acme.test.", "A")]  # asked once, the reply waited for


def test_decoys_alone_are_a_timeout():
    with DNSServer(ZONE, silent=True, decoys=("wrong id", "other port", "malformed")) as server:
        started = time.monotonic()
        result = check(at(server, "acme.test", timeout_s=0.5))
        took = time.monotonic() - started

    assert 0.5 <= took < 3
    assert result.error == f"timed out after 0.5 s: no answer from resolver 127.0.0.1:{server.port}"
    assert (result.response.connected, result.response.dns_rcode) == (False, None)


def test_a_slow_answer_alone_is_degraded_performance(server):
    result = check(at(server, "acme.test"), ["[DNS_RCODE] == NOERROR", "[RESPONSE_TIME] < 0"])

    assert (result.success, result.seen) == (False, DEGRADED)


def test_it_asks_over_ipv6():
    try:
        server = DNSServer(ZONE, host="::1")
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    with server:
        result = check(Target("acme.test", "AAAA", ("::1", server.port)), ["[BODY] == 2001:db8::10"])

    assert (result.success, result.error, result.response.ip) == (True, None, "::1"), result.reason


def test_a_loopback_resolver_is_refused_when_private_addresses_are_not_allowed(server):
    result = check(at(server, "acme.test"), policy=NO_PRIVATE)

    assert result.error == "refused: 127.0.0.1 is a loopback address (allow it with PULSE_ALLOW_PRIVATE_TARGETS)"
    assert (result.seen, result.response.connected, result.response.ip) == (MAJOR_OUTAGE, False, "127.0.0.1")
    assert server.queries == []  # not a packet


@pytest.mark.parametrize(
    ("resolver", "policy", "refused_as"),
    [
        ("169.254.169.254", DEFAULT, "is a link-local/cloud-metadata address"),
        ("fd00:ec2::254", DEFAULT, "is a link-local/cloud-metadata address"),
        ("10.0.0.1", NO_PRIVATE, "is a private address"),
        ("::ffff:10.0.0.1", NO_PRIVATE, "is a private address"),
    ],
)
def test_a_refused_resolver_sees_no_packet(tripwire, resolver, policy, refused_as):
    result = check(Target("acme.test", "A", (resolver, 53), timeout_s=10), policy=policy)

    assert result.error is not None and result.error.startswith(f"refused: {resolver} ") and refused_as in result.error
    assert (result.seen, result.response.connected) == (MAJOR_OUTAGE, False)
    assert tripwire == []


def test_the_system_resolver_is_held_to_the_policy_too(tmp_path, monkeypatch, tripwire):
    resolv_conf = tmp_path / "resolv.conf"
    resolv_conf.write_text("nameserver 127.0.0.53\noptions edns0 trust-ad\n")
    monkeypatch.setattr(kind, "RESOLV_CONF", str(resolv_conf))

    result = check(Target("acme.test"), policy=NO_PRIVATE)

    assert result.error == (
        "refused: 127.0.0.53 is a loopback address (allow it with PULSE_ALLOW_PRIVATE_TARGETS);"
        f" it is the system's resolver ({resolv_conf}): name an allowed one in the check's resolver field"
    )
    assert result.seen == MAJOR_OUTAGE
    assert tripwire == []


def test_when_every_system_resolver_is_refused_the_error_says_so(tmp_path, monkeypatch, tripwire):
    resolv_conf = tmp_path / "resolv.conf"
    resolv_conf.write_text("nameserver 10.0.0.1\nnameserver 127.0.0.53\n")
    monkeypatch.setattr(kind, "RESOLV_CONF", str(resolv_conf))

    result = check(Target("acme.test"), policy=NO_PRIVATE)

    assert result.error == (
        "refused: 10.0.0.1 is a private address (allow it with PULSE_ALLOW_PRIVATE_TARGETS);"
        f" every resolver in {resolv_conf} is refused: name an allowed one in the check's resolver field"
    )
    assert tripwire == []


def test_the_first_allowed_system_resolver_is_asked(tmp_path, monkeypatch, server):
    resolv_conf = tmp_path / "resolv.conf"
    resolv_conf.write_text("nameserver 169.254.169.254\nnameserver 127.0.0.1\n")
    monkeypatch.setattr(kind, "RESOLV_CONF", str(resolv_conf))
    monkeypatch.setattr(kind, "PORT", server.port)  # the system's resolvers listen on 53

    result = check(Target("acme.test", timeout_s=10))

    assert (result.success, result.error, result.response.ip) == (True, None, "127.0.0.1"), result.reason
    assert server.seen("udp") == [("acme.test.", "A")]


def test_no_system_resolver_is_an_error(tmp_path, monkeypatch, tripwire):
    empty = tmp_path / "resolv.conf"
    empty.write_text("# nothing\n")
    monkeypatch.setattr(kind, "RESOLV_CONF", str(empty))

    result = check(Target("acme.test"))

    assert result.error == f"no system resolver: {empty} names none (name one in the check's resolver field)"
    assert tripwire == []


# The configuration file.

FILE = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {key: mx, name: Mail DNS, kind: dns, query: acme.example, record: mx, resolver: "192.0.2.53:5353",
         conditions: ["[DNS_RCODE] == NOERROR", "[BODY] == pat(*mail*)"]}
      - {key: site, name: Site DNS, kind: dns, query: _dmarc.acme.example., resolver: "2001:db8::53"}
      - {key: api, name: API, url: "https://api.acme.example/health"}
"""


def test_a_dns_component_is_applied_from_the_file(database):
    configfile.apply(configfile.load(FILE))

    mx = Component.get(Component.key == "mx")
    assert (mx.type, mx.kind, mx.url) == ("ENDPOINT", "dns", None)
    assert mx.target == {"query": "acme.example", "record": "MX", "resolver": "192.0.2.53:5353"}
    assert mx.conditions == ["[DNS_RCODE] == NOERROR", "[BODY] == pat(*mail*)"]
    site = Component.get(Component.key == "site")
    assert site.target == {"query": "_dmarc.acme.example.", "record": "A", "resolver": "[2001:db8::53]:53"}
    assert site.conditions == ["[DNS_RCODE] == NOERROR"]  # the dns kind's default
    assert kind.target(_stored(site.target)) == Target("_dmarc.acme.example.", "A", ("2001:db8::53", 53), 10.0)


def _stored(target):
    from pulse.uptime.kinds import Stored

    return Stored("GET", None, {}, False, None, 10.0, target)


PLACE = "organizations[0].components[0]"


@pytest.mark.parametrize(
    "change, problem",
    [
        (("record: mx", "record: PTR"), f"{PLACE}.record: 'PTR' is not a record type a dns check"),
        (
            ('resolver: "192.0.2.53:5353"', "resolver: dns.acme.example"),
            f"{PLACE}.resolver: 'dns.acme.example' is not an IP address: a resolver is named by its"
            " address (a host name would need a resolver to find it)",
        ),
        (('resolver: "192.0.2.53:5353"', 'resolver: "[2001:db8::53]:99999"'), "'99999' is not a port (1 to 65535)"),
        (("query: acme.example, ", ""), f"{PLACE}: a dns check needs a query (the name asked about)"),
        (("query: acme.example", "query: https://acme.example/"), f"{PLACE}.query: not a domain name"),
        (("query: acme.example", "query: acme..example"), f"{PLACE}.query: not a domain name"),
        (
            ("record: mx", "record: mx, host: db.internal, port: 53"),
            f"{PLACE}: host is a field of tcp, icmp or tls checks, not of dns ones\n"
            f"{PLACE}: port is a field of tcp or tls checks, not of dns ones",
        ),
        (("record: mx", "record: mx, url: 'http://x/'"), f"{PLACE}: url is a field of http checks, not of dns ones"),
        (
            ('"[BODY] == pat(*mail*)"', '"[STATUS] == 200"'),
            f"{PLACE}.conditions[1]: [STATUS] is not a placeholder of dns checks"
            " (use [BODY], [DNS_RCODE], [RESPONSE_TIME])",
        ),
        (
            ('url: "https://api.acme.example/health"', 'url: "https://api/", conditions: ["[DNS_RCODE] == NOERROR"]'),
            "organizations[0].components[2].conditions[0]: [DNS_RCODE] is not a placeholder of http checks",
        ),
        (
            ("kind: dns, query: acme.example, record: mx", "query: acme.example, record: mx"),
            f"{PLACE}: query is a field of dns checks, not of http ones",
        ),
    ],
)
def test_a_bad_dns_field_is_refused_naming_its_place_and_reason(change, problem):
    with pytest.raises(ConfigError) as refused:
        configfile.load(FILE.replace(*change))

    assert problem in str(refused.value)


# The batch path, into statuses and incidents.

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def slot(n):
    return (T0 + timedelta(seconds=30 * n)).isoformat()


def test_a_dns_component_drives_status_and_incidents_through_the_batch_path(make_component, target):
    zone = dict(ZONE)
    with DNSServer(zone) as server:
        made = make_component(
            target,
            key="dns",
            name="Acme DNS",
            url=None,
            conditions=["[DNS_RCODE] == NOERROR", "[BODY] == pat(*192.0.2.10*)"],
            failure_threshold=2,
            success_threshold=1,
        )
        fields = {"query": "acme.test", "record": "A", "resolver": f"127.0.0.1:{server.port}"}
        Component.update(kind="dns", target=fields).where(Component.id == made.id).execute()
        checks.fn([[made.id, slot(0)]])
        up = UptimeCheck.get()
        assert (up.success, up.outcome, up.status_code, up.error) == (True, "OPERATIONAL", None, None)

        # The name is gone from the zone: NXDOMAIN twice, and the component is down with one incident.
        zone.clear()
        checks.fn([[made.id, slot(1)]])
        checks.fn([[made.id, slot(2)]])
        down = Component.get_by_id(made.id)
        assert (down.status, down.consecutive_failures) == ("MAJOR_OUTAGE", 2)
        [incident] = Incident.select()
        assert (incident.title, incident.resolved_at) == ("Acme DNS is down", None)
        [opened] = IncidentUpdate.select()
        assert "[DNS_RCODE] (NXDOMAIN) == NOERROR" in opened.message
        failed = UptimeCheck.select().order_by(UptimeCheck.scheduled_at.desc()).first()
        assert (failed.success, failed.error) == (False, None)

        zone[("acme.test.", "A")] = ["192.0.2.10"]
        checks.fn([[made.id, slot(3)]])
    assert Component.get_by_id(made.id).status == "OPERATIONAL"
    assert Incident.get().resolved_at is not None
    assert len(server.seen("udp")) == 4
    assert target.received == []  # the http target of the fixture was never asked


# pulse check --dns


def test_pulse_check_dns_asks_the_named_resolver(server):
    resolver = f"127.0.0.1:{server.port}"
    passing = pulse(
        "check", "--dns", "acme.test", "--type", "MX", "--resolver", resolver, "-c", "[BODY] == pat(*mail*)", "--json"
    )
    missing = pulse("check", "--dns", "nope.acme.test", "--resolver", resolver, "--json")
    plain = pulse("check", "--dns", "acme.test", "--resolver", resolver)

    assert passing.returncode == 0, passing.stdout + passing.stderr
    report = json.loads(passing.stdout)
    assert (report["kind"], report["success"], report["status"], report["error"], report["observed"]) == (
        "dns",
        True,
        None,
        None,
        "OPERATIONAL",
    )
    assert report["conditions"][0]["resolved"] == "[BODY] (10 mail.acme.test.\n20 bac...(truncated)) == pat(*mail*)"
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["conditions"][0]["resolved"] == "[DNS_RCODE] (NXDOMAIN) == NOERROR"
    assert plain.returncode == 0 and plain.stdout.splitlines()[0] == "PASS  [DNS_RCODE] (NOERROR) == NOERROR"
    assert server.seen("udp") == [("acme.test.", "MX"), ("nope.acme.test.", "A"), ("acme.test.", "A")]


def test_pulse_check_dns_refuses_bad_input_before_any_packet(server):
    resolver = f"127.0.0.1:{server.port}"
    bad_type = pulse("check", "--dns", "acme.test", "--type", "PTR", "--resolver", resolver)
    named = pulse("check", "--dns", "acme.test", "--resolver", "dns.acme.test")
    wrong = pulse("check", "--dns", "acme.test", "--resolver", resolver, "-c", "[STATUS] == 200")
    refused = pulse(
        "check", "--dns", "acme.test", "--resolver", resolver, "--json", PULSE_ALLOW_PRIVATE_TARGETS="false"
    )

    assert (bad_type.returncode, bad_type.stderr) == (
        2,
        "pulse: --type PTR: not a record type a dns check asks for (use A, AAAA, CNAME, MX, TXT, NS, SOA)\n",
    )
    assert named.returncode == 2 and "--resolver: 'dns.acme.test' is not an IP address" in named.stderr
    assert (wrong.returncode, wrong.stderr) == (
        2,
        "pulse: [STATUS] == 200: [STATUS] is not a placeholder of dns checks\n",
    )
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["error"].startswith("refused: 127.0.0.1 is a loopback address")
    assert server.queries == []
