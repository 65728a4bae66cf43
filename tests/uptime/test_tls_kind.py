"""The tls check kind (`pulse.uptime.kinds.tls`) against real local servers presenting certificates
the tests make: valid, about to expire, expired, untrusted, for another name; after STARTTLS
(SMTP, IMAP, PostgreSQL); servers that do not speak the protocol; the configuration file; the
batch path into component status; and `pulse check --cert`."""

import json
import re
import time
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from actors.uptime import checks
from pulse import configfile
from pulse.components.status import MAJOR_OUTAGE, OPERATIONAL
from pulse.errors import ConfigError
from pulse.models import Component, Incident, IncidentUpdate, UptimeCheck
from pulse.net import AddressPolicy
from pulse.uptime.kinds import KINDS
from pulse.uptime.kinds.tls import DEFAULT_CONDITIONS, Target, run
from tests.support.certs import Authority
from tests.support.cli import pulse
from tests.support.env import ENV, HOST
from tests.support.scripted import CLOSE, IMAP, LINE, POSTGRES, SMTP, Pause, ScriptedServer
from tests.support.target import closed_port
from tests.support.tcpserver import TCPServer
from tests.support.wait import wait_for

DEFAULT = AddressPolicy()  # loopback allowed, as by default (PULSE_ALLOW_PRIVATE_TARGETS)


def check(target, conditions=(), policy=DEFAULT, extract=None):
    return run(target, list(conditions), extract or {}, policy)


@pytest.fixture
def authority(tmp_path):
    return Authority(tmp_path)


def trusting(authority, port, **fields):
    """A target on ``localhost`` that trusts the test CA."""
    return Target("localhost", port, ca=authority.pem.read_text(), **fields)


def test_it_is_the_registry_entry_of_tls():
    assert KINDS["tls"].run is run
    assert KINDS["tls"].flag == "cert"  # --tls is tcp's TLS on connect


def test_a_valid_certificate_passes_the_default_conditions_in_one_handshake(authority):
    with ScriptedServer((), tls=authority.server(["localhost", "127.0.0.1"], days=90)) as server:
        result = check(trusting(authority, server.port))
        wait_for(lambda: server.handshakes == 1, "the server's side of the handshake")

    assert (result.success, result.error, result.seen) == (True, None, OPERATIONAL), result.reason
    assert result.results[0].resolved == "[CERTIFICATE_VALID] (true) == true"
    assert result.response.certificate_expiration_ms == pytest.approx(90 * 86_400_000, abs=60_000)
    assert (result.response.connected, result.response.ip, result.response.status) == (True, "127.0.0.1", None)
    assert (server.accepted, server.handshakes) == (1, 1)  # a valid certificate costs one handshake
    described = json.loads(result.response.body)
    assert described["names"] == ["localhost", "127.0.0.1"]
    assert (described["subject"], described["issuer"]) == ("CN=localhost", "CN=Pulse tls test CA")
    assert re.fullmatch(r"[0-9a-f]{64}", described["sha256"])


def test_the_body_describes_the_certificate_for_conditions(authority):
    with ScriptedServer((), tls=authority.server(["localhost"], days=90)) as server:
        result = check(
            trusting(authority, server.port),
            ["[BODY].issuer == pat(*Pulse tls test CA)", "[BODY].names == pat(*localhost*)", "[BODY].subject == x"],
        )

    assert [r.success for r in result.results] == [True, True, False]
    assert result.reason == "[BODY].subject (CN=localhost) == x"


def test_a_certificate_expiring_in_two_days_fails_the_expiration_condition_showing_the_time_left(authority):
    with ScriptedServer((), tls=authority.server(["localhost"], days=2)) as server:
        result = check(trusting(authority, server.port))

    assert (result.success, result.error, result.seen) == (False, None, MAJOR_OUTAGE)
    assert result.results[0].success  # still valid
    assert re.fullmatch(r"\[CERTIFICATE_EXPIRATION\] \(47h5\dm\d+s\) > 14d \(336h\)", result.reason), result.reason


def test_an_expired_certificate_is_reported_with_why_it_is_invalid(authority):
    with ScriptedServer((), tls=authority.server(["localhost"], days=-3)) as server:
        result = check(trusting(authority, server.port))
        wait_for(lambda: (server.accepted, server.handshakes) == (2, 1), "two connections, one handshake")

    assert (result.success, result.error) == (False, None)
    expired = r"\[CERTIFICATE_VALID\] \(false: certificate has expired\) == true; "
    assert re.fullmatch(
        expired + r"\[CERTIFICATE_EXPIRATION\] \(-7[12]h(\d+m)?(\d+s)?\) > 14d \(336h\)", result.reason
    ), result.reason
    assert result.response.certificate_expiration_ms == pytest.approx(-3 * 86_400_000, abs=60_000)
    assert (server.accepted, server.handshakes) == (2, 1)  # refused once verified, then read unverified


def test_an_untrusted_certificate_is_invalid_but_still_read(authority):
    with ScriptedServer((), tls=authority.server(["localhost"], days=90)) as server:
        result = check(Target("localhost", server.port), DEFAULT_CONDITIONS)  # the test CA not trusted

    assert result.error is None
    assert result.reason == "[CERTIFICATE_VALID] (false: unable to get local issuer certificate) == true"
    assert result.response.certificate_valid is False
    assert result.response.certificate_expiration_ms == pytest.approx(90 * 86_400_000, abs=60_000)


def test_a_self_signed_certificate_is_invalid_and_an_operator_may_check_only_its_expiry(authority):
    with ScriptedServer((), tls=authority.server(["localhost"], days=30, signed=False)) as server:
        judged = check(trusting(authority, server.port))
        expiry_only = check(trusting(authority, server.port), ["[CERTIFICATE_EXPIRATION] > 14d"])

    assert judged.reason == "[CERTIFICATE_VALID] (false: self-signed certificate) == true"
    assert json.loads(judged.response.body)["issuer"] == "CN=localhost"
    assert (expiry_only.success, expiry_only.seen) == (True, OPERATIONAL)


@pytest.mark.parametrize(
    ("connect_to", "problem"),
    [
        ("localhost", "Hostname mismatch, certificate is not valid for 'localhost'"),
        ("127.0.0.1", "IP address mismatch, certificate is not valid for '127.0.0.1'"),
    ],
)
def test_a_certificate_for_another_name_is_invalid(authority, connect_to, problem):
    with ScriptedServer((), tls=authority.server(["mail.acme.example"], days=90)) as server:
        result = check(Target(connect_to, server.port, ca=authority.pem.read_text()), ["[CERTIFICATE_VALID] == true"])

    assert (result.success, result.error) == (False, None)
    assert result.reason == f"[CERTIFICATE_VALID] (false: {problem}) == true"
    assert json.loads(result.response.body)["names"] == ["mail.acme.example"]


@pytest.mark.parametrize(
    ("protocol", "script", "sent"),
    [
        ("smtp", SMTP, [re.compile(rb"EHLO \[127\.0\.0\.1\]\r\n"), b"STARTTLS\r\n"]),
        ("imap", IMAP, [b"a1 STARTTLS\r\n"]),
        ("postgres", POSTGRES, [bytes.fromhex("00000008 04d2162f")]),
    ],
)
def test_it_reads_the_certificate_after_starttls(authority, protocol, script, sent):
    with ScriptedServer(script, tls=authority.server(["localhost"], days=90)) as server:
        result = check(trusting(authority, server.port, starttls=protocol))
        wait_for(lambda: server.handshakes == 1, "the server's side of the handshake")

    assert (result.success, result.error) == (True, None), result.reason
    assert server.handshakes == 1
    for got, expected in zip(server.received, sent, strict=True):
        assert expected.fullmatch(got) if isinstance(expected, re.Pattern) else got == expected


def test_an_invalid_certificate_after_starttls_repeats_the_exchange(authority):
    with ScriptedServer(SMTP, tls=authority.server(["localhost"], days=90)) as server:
        result = check(Target("localhost", server.port, starttls="smtp"))
        wait_for(lambda: (server.accepted, server.handshakes) == (2, 1), "two connections, one handshake")

    assert result.reason == "[CERTIFICATE_VALID] (false: unable to get local issuer certificate) == true"
    assert (server.accepted, server.handshakes, len(server.received)) == (2, 1, 4)


REFUSALS = [
    ("smtp", (b"SSH-2.0-OpenSSH_9.6\r\n",), "does not speak smtp: expected a 220 greeting, got 'SSH-2.0-OpenSSH_9.6'"),
    ("smtp", (b"554 no service\r\n",), "does not speak smtp: expected a 220 greeting, got '554 no service'"),
    ("smtp", (b"220 hi\r\n", LINE, b"250-hi\r\n250 8BITMIME\r\n"), "does not offer STARTTLS (smtp)"),
    ("smtp", (b"220 hi\r\n", LINE, b"500 what?\r\n"), "refused EHLO: '500 what?'"),
    (
        "smtp",
        (b"220 hi\r\n", LINE, b"250-hi\r\n250 STARTTLS\r\n", LINE, b"454 TLS not available\r\n"),
        "refused STARTTLS: '454 TLS not available'",
    ),
    (
        "smtp",
        (b"220 hi\r\n", LINE, b"250-hi\r\n250 STARTTLS\r\n", LINE, b"220 go\r\n250 injected\r\n"),
        "sent data after its smtp STARTTLS answer",
    ),
    ("smtp", (b"\x1b[31mred\x07\r\n",), r"expected a 220 greeting, got '\x1b[31mred\x07'"),
    ("smtp", (b"220 hi\r\n", LINE, b"250-hi\r\n", CLOSE), "closed the connection during smtp STARTTLS"),
    ("imap", (b"* PREAUTH welcome\r\n",), "refused STARTTLS (imap): '* PREAUTH welcome'"),
    ("imap", (b"+OK POP3 ready\r\n",), "does not speak imap: expected a '* OK' greeting, got '+OK POP3 ready'"),
    (
        "imap",
        (b"* OK hi\r\n", LINE, b"a1 BAD unknown command\r\n"),
        "refused STARTTLS (imap): 'a1 BAD unknown command'",
    ),
    ("postgres", (8, b"N"), "does not offer SSL (postgres answered N to SSLRequest)"),
    (
        "postgres",
        (8, b"HTTP/1.1 400 Bad Request\r\n"),
        "does not speak postgres: expected S or N in answer to SSLRequest",
    ),
]


@pytest.mark.parametrize(("protocol", "script", "error"), REFUSALS)
def test_a_server_that_does_not_speak_starttls_is_a_clear_error(protocol, script, error):
    with ScriptedServer(script) as server:
        result = check(Target("127.0.0.1", server.port, starttls=protocol, timeout_s=5))

    assert result.error is not None and result.error.startswith("127.0.0.1 "), result.error
    assert error in result.error
    assert "\x1b" not in result.error and "\x07" not in result.error  # shown escaped, never as sent
    assert (result.seen, result.response.connected) == (MAJOR_OUTAGE, False)


def test_a_silent_server_is_bounded_by_the_timeout():
    with TCPServer("silent") as server:
        started = time.monotonic()
        result = check(Target("127.0.0.1", server.port, starttls="smtp", timeout_s=0.5))
        plain = check(Target("127.0.0.1", server.port, timeout_s=0.5))  # the TLS handshake never comes
        took = time.monotonic() - started

    assert 1.0 <= took < 4
    assert result.error == "timed out after 0.5 s waiting for the smtp answer from 127.0.0.1"
    assert plain.error == "timed out after 0.5 s"


def test_a_server_trickling_bytes_is_bounded_by_the_whole_timeout_not_each_read():
    trickle = (b"220-", *[step for _ in range(200) for step in (Pause(0.05), b"x")])  # 10 s in all
    with ScriptedServer(trickle) as server:
        started = time.monotonic()
        result = check(Target("127.0.0.1", server.port, starttls="smtp", timeout_s=1))
        took = time.monotonic() - started

    assert 1 <= took < 2
    assert result.error == "timed out after 1 s waiting for the smtp answer from 127.0.0.1"


@pytest.mark.parametrize(
    ("protocol", "flood", "error"),
    [
        ("smtp", b"220-flood\r\n" * 200, "127.0.0.1 sent an smtp reply of more than 100 lines"),
        ("smtp", b"x" * 10_000, "127.0.0.1 sent a line of more than 4096 bytes (smtp)"),
        ("imap", b"* OK hi\r\n" + b"* noise\r\n" * 200, "127.0.0.1 never answered 'a1 STARTTLS' (imap)"),
        (
            "imap",
            b"* OK hi\r\n" + (b"* " + b"n" * 4000 + b"\r\n") * 20,
            "127.0.0.1 sent more than 65536 bytes before imap STARTTLS",
        ),
    ],
)
def test_a_flood_is_bounded(protocol, flood, error):
    script = (flood, LINE) if protocol == "imap" else (flood,)
    with ScriptedServer(script) as server:
        result = check(Target("127.0.0.1", server.port, starttls=protocol, timeout_s=5))

    assert result.error is not None and result.error.startswith(error), result.error


def test_a_plain_server_is_a_tls_error():
    with TCPServer("banner", banner=b"HTTP/1.1 400 Bad Request\r\n\r\n") as server:
        result = check(Target("127.0.0.1", server.port, timeout_s=5))

    assert result.error is not None and result.error.startswith("TLS error with 127.0.0.1: ")
    assert result.response.connected is False


def test_the_local_postgresql_answers_the_ssl_request():
    """The real PostgreSQL the tests use (port 5432): its certificate when it has SSL on, else a clear
    refusal. Its configuration is only read."""
    with psycopg.connect(ENV["PULSE_DATABASE_URL"].rsplit("/", 1)[0] + "/postgres") as connection:
        ssl_on = connection.execute("SHOW ssl").fetchone()[0] == "on"

    result = check(Target(HOST, 5432, starttls="postgres", timeout_s=5), ["[CONNECTED] == true"])

    if ssl_on:
        assert (result.error, result.response.connected) == (None, True)
        assert result.response.certificate_expiration_ms is not None
    else:
        assert result.error == f"{HOST} does not offer SSL (postgres answered N to SSLRequest)"


def test_a_refused_address_sees_no_packet(authority):
    with ScriptedServer((), tls=authority.server(["localhost"], days=90)) as server:
        result = check(Target("127.0.0.1", server.port), policy=AddressPolicy(allow_private=False))

    assert result.error == "refused: 127.0.0.1 is a loopback address (allow it with PULSE_ALLOW_PRIVATE_TARGETS)"
    assert server.accepted == 0


def test_a_refused_port_and_an_unknown_host_are_named():
    assert check(Target("127.0.0.1", closed_port())).error == "connection refused by 127.0.0.1"
    assert check(Target("no-such-host.invalid")).error == "cannot resolve host no-such-host.invalid"


# The batch path: a tls component's checks into its status and incidents.

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def slot(n):
    return (T0 + timedelta(seconds=30 * n)).isoformat()


def test_a_tls_component_drives_status_and_incidents_through_the_batch_path(make_component, target, authority):
    with ScriptedServer(SMTP, tls=authority.server(["localhost"], days=90)) as server:
        made = make_component(
            target,
            key="mail",
            name="Mail",
            url=None,
            conditions=list(DEFAULT_CONDITIONS),
            failure_threshold=1,
            success_threshold=1,
        )
        fields = {"host": "localhost", "port": server.port, "starttls": "smtp"}
        Component.update(kind="tls", target=fields).where(Component.id == made.id).execute()
        checks.fn([[made.id, slot(0)]])  # the test CA is not among the system's: invalid
        Component.update(conditions=["[CERTIFICATE_EXPIRATION] > 14d"]).where(Component.id == made.id).execute()
        checks.fn([[made.id, slot(1)]])

    first, second = UptimeCheck.select().order_by(UptimeCheck.scheduled_at)
    assert (first.success, first.outcome, first.error, first.status_code) == (False, MAJOR_OUTAGE, None, None)
    why = "[CERTIFICATE_VALID] (false: unable to get local issuer certificate) == true"
    assert first.condition_results[0]["resolved"] == why
    [opened, _] = IncidentUpdate.select().order_by(IncidentUpdate.id)
    assert why in opened.message
    assert (second.success, second.outcome) == (True, OPERATIONAL)
    assert Component.get_by_id(made.id).status == OPERATIONAL
    assert Incident.get().resolved_at is not None


FILE = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {key: web, name: Web certificate, kind: tls, host: www.acme.example}
      - {key: mail, name: Mail certificate, kind: tls, host: mail.acme.example, port: 587, starttls: smtp,
         conditions: ["[CERTIFICATE_EXPIRATION] > 720h"]}
      - {key: db, name: Database certificate, kind: tls, host: db.internal, starttls: postgres}
"""


def test_a_tls_component_is_applied_from_the_file(database):
    configfile.apply(configfile.load(FILE))

    web, mail, db = (Component.get(Component.key == key) for key in ("web", "mail", "db"))
    assert (web.kind, web.url, web.target) == ("tls", None, {"host": "www.acme.example", "port": 443, "starttls": None})
    assert web.conditions == ["[CERTIFICATE_VALID] == true", "[CERTIFICATE_EXPIRATION] > 14d"]
    assert mail.target == {"host": "mail.acme.example", "port": 587, "starttls": "smtp"}
    assert mail.conditions == ["[CERTIFICATE_EXPIRATION] > 720h"]
    assert db.target == {"host": "db.internal", "port": 5432, "starttls": "postgres"}


PLACE = "organizations[0].components[1]"


@pytest.mark.parametrize(
    "change, problem",
    [
        (("starttls: smtp", "starttls: pop3"), f"{PLACE}.starttls: Input should be 'smtp', 'imap' or 'postgres'"),
        (("host: mail.acme.example, ", ""), f"{PLACE}: a tls check needs a host (and a port, 443 by default)"),
        (("port: 587", "port: 0"), f"{PLACE}.port: Input should be greater than or equal to 1"),
        (
            ("starttls: smtp", "starttls: smtp, send: 'EHLO x'"),
            f"{PLACE}: send is a field of tcp checks, not of tls ones",
        ),
        (
            ("starttls: smtp", "starttls: smtp, tls: true"),
            f"{PLACE}: tls is a field of tcp checks, not of tls ones",
        ),
        (
            ('"[CERTIFICATE_EXPIRATION] > 720h"', '"[STATUS] == 200"'),
            f"{PLACE}.conditions[0]: [STATUS] is not a placeholder of tls checks (use [BODY],"
            " [CERTIFICATE_EXPIRATION], [CERTIFICATE_VALID], [CONNECTED], [IP], [RESPONSE_TIME])",
        ),
        (
            ('"[CERTIFICATE_EXPIRATION] > 720h"', '"[CERTIFICATE_VALID] > 0"'),
            "[CERTIFICATE_VALID] is true or false: compare it with == or !=, not >",
        ),
        (
            (
                "kind: tls, host: mail.acme.example, port: 587, starttls: smtp",
                "kind: tcp, host: m, port: 25, starttls: smtp",
            ),
            f"{PLACE}: starttls is a field of tls checks, not of tcp ones",
        ),
    ],
)
def test_a_bad_tls_field_is_refused_naming_its_place_and_reason(change, problem):
    with pytest.raises(ConfigError) as refused:
        configfile.load(FILE.replace(*change))

    assert problem in str(refused.value)


def test_certificate_valid_is_not_a_placeholder_of_tcp_checks():
    tcp = '{key: web, name: W, kind: tcp, host: w, port: 443, tls: true, conditions: ["[CERTIFICATE_VALID] == true"]}'
    text = FILE.replace("{key: web, name: Web certificate, kind: tls, host: www.acme.example}", tcp)
    with pytest.raises(ConfigError) as refused:
        configfile.load(text)

    assert (
        "organizations[0].components[0].conditions[0]: [CERTIFICATE_VALID] is not a placeholder of tcp checks"
        in str(refused.value)
    )


# pulse check --cert


def test_pulse_check_cert_verifies_against_the_system_store(authority):
    with ScriptedServer(IMAP, tls=authority.server(["localhost"], days=2)) as server:
        address = f"localhost:{server.port}"
        untrusted = pulse("check", "--cert", address, "--starttls", "imap", "--json")
        trusted = pulse(
            "check", "--cert", address, "--starttls", "imap", "-c", "[CERTIFICATE_VALID] == true",
            SSL_CERT_FILE=str(authority.pem),
        )  # fmt: skip
        expiring = pulse("check", "--cert", address, "--starttls", "imap", SSL_CERT_FILE=str(authority.pem))

    report = json.loads(untrusted.stdout)
    assert (untrusted.returncode, report["kind"], report["error"]) == (1, "tls", None)
    assert report["conditions"][0]["resolved"] == (
        "[CERTIFICATE_VALID] (false: unable to get local issuer certificate) == true"
    )
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    assert trusted.stdout.splitlines()[0] == "PASS  [CERTIFICATE_VALID] (true) == true"
    assert expiring.returncode == 1
    assert re.match(r"FAIL  \[CERTIFICATE_EXPIRATION\] \(47h5\dm\d+s\) > 14d \(336h\)", expiring.stdout.splitlines()[1])


@pytest.mark.parametrize(
    ("address", "starttls", "expected"),
    [
        ("www.acme.example", None, Target("www.acme.example", 443, timeout_s=3)),
        ("mail.acme.example", "smtp", Target("mail.acme.example", 25, "smtp", timeout_s=3)),
        ("mail.acme.example:587", "smtp", Target("mail.acme.example", 587, "smtp", timeout_s=3)),
        ("[::1]:993", None, Target("::1", 993, timeout_s=3)),
        ("db.internal", "postgres", Target("db.internal", 5432, "postgres", timeout_s=3)),
    ],
)
def test_the_command_line_port_defaults_to_the_protocol_s(address, starttls, expected):
    assert KINDS["tls"].command_line(address, {"starttls": starttls, "timeout_s": 3}) == expected


def test_pulse_check_cert_refuses_bad_input():
    no_port = pulse("check", "--cert", "127.0.0.1:0")
    assert no_port.returncode == 2 and "--cert '127.0.0.1:0': expected HOST or HOST:PORT" in no_port.stderr
    bad = pulse("check", "--cert", "localhost", "--starttls", "pop3")
    assert bad.returncode == 2 and "pop3" in bad.stderr
    wrong = pulse("check", "--cert", "localhost:1", "-c", "[STATUS] == 200")
    assert (wrong.returncode, wrong.stderr) == (
        2,
        "pulse: [STATUS] == 200: [STATUS] is not a placeholder of tls checks\n",
    )
    both = pulse("check", "--cert", "localhost:1", "--tcp", "localhost:1")
    assert both.returncode == 2 and "--cert" in both.stderr
    refused = pulse("check", "--cert", f"127.0.0.1:{closed_port()}", "--starttls", "smtp", "--json")
    assert json.loads(refused.stdout)["error"] == "connection refused by 127.0.0.1"
