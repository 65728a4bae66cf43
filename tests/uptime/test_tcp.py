"""The tcp check kind (`pulse.uptime.kinds.tcp`) against real local servers: connected, refused,
silent, echoing, speaking first, over TLS, IPv6, and the address policy."""

import ssl
import time

import pytest

from pulse.components.status import DEGRADED, MAJOR_OUTAGE, OPERATIONAL
from pulse.net import AddressPolicy
from pulse.uptime.kinds import KINDS
from pulse.uptime.kinds.tcp import MAX_REPLY, Target, run
from tests.conftest import expires_in_ms
from tests.support.target import closed_port
from tests.support.tcpserver import TCPServer
from tests.support.wait import wait_for

DEFAULT = AddressPolicy()  # loopback allowed, as by default (PULSE_ALLOW_PRIVATE_TARGETS)


def check(target, conditions=(), policy=DEFAULT, extract=None):
    return run(target, list(conditions), extract or {}, policy)


def test_it_is_the_registry_entry_of_tcp():
    assert KINDS["tcp"].run is run
    assert sorted(KINDS) == ["dns", "http", "icmp", "tcp", "tls"]


def test_a_port_that_accepts_is_connected():
    with TCPServer("silent") as server:
        result = check(Target("127.0.0.1", server.port), ["[CONNECTED] == true", "[RESPONSE_TIME] < 1000"])
        wait_for(lambda: server.accepted == 1, "the connection accepted")

    assert (result.success, result.error, result.seen) == (True, None, OPERATIONAL)
    assert result.response.connected is True and result.response.ip == "127.0.0.1"
    assert result.response.status is None and result.response.body == b""  # nothing sent, no [BODY]: nothing read
    assert result.results[0].resolved == "[CONNECTED] (true) == true"


def test_a_refused_port_is_an_outage_naming_the_host():
    result = check(Target("127.0.0.1", closed_port()), ["[CONNECTED] == true"])

    assert (result.success, result.seen) == (False, MAJOR_OUTAGE)
    assert result.error == "connection refused by 127.0.0.1"
    assert result.response.connected is False
    assert result.results[0].resolved == "[CONNECTED] (false) == true"


def test_it_sends_the_payload_and_matches_the_reply():
    with TCPServer("echo") as server:
        result = check(
            Target("127.0.0.1", server.port, send="ready?\r\n"),
            ["[CONNECTED] == true", "[BODY] == pat(*ready*)", "[BODY] == pat(echo:*)"],
        )
        failing = check(Target("127.0.0.1", server.port, send="busy"), ["[BODY] == pat(*ready*)"])

    assert (result.success, result.error) == (True, None), result.reason
    assert result.response.body == b"echo: ready?\r\n"
    assert server.received == [b"ready?\r\n", b"busy"]
    assert (failing.success, failing.seen, failing.error) == (False, MAJOR_OUTAGE, None)
    assert failing.reason == "[BODY] (echo: busy) == pat(*ready*)"


def test_a_server_that_speaks_first_is_read_when_a_condition_reads_the_body():
    with TCPServer("banner", banner=b"220 mail.acme.example ESMTP ready\r\n") as server:
        result = check(Target("127.0.0.1", server.port), ["[BODY] == pat(220 *)"])

    assert (result.success, result.error) == (True, None), result.reason
    assert result.response.body.startswith(b"220 mail")


def test_a_reply_is_bounded():
    with TCPServer("banner", banner=b"x" * (3 * MAX_REPLY)) as server:
        result = check(Target("127.0.0.1", server.port), ["len([BODY]) > 0"])

    assert result.success
    assert 0 < len(result.response.body) <= MAX_REPLY


def test_a_server_that_never_answers_times_out():
    with TCPServer("silent") as server:
        started = time.monotonic()
        result = check(Target("127.0.0.1", server.port, send="PING\r\n", timeout_s=0.5), ["[CONNECTED] == true"])
        took = time.monotonic() - started

    assert 0.5 <= took < 3
    assert result.error == "timed out after 0.5 s waiting for a reply from 127.0.0.1"
    assert (result.success, result.seen) == (False, MAJOR_OUTAGE)
    assert result.response.connected is True  # connected, then waited in vain


def test_a_reset_is_told_from_an_orderly_close():
    with TCPServer("reset") as resetting, TCPServer("close") as closing:
        reset = check(Target("127.0.0.1", resetting.port, send="PING\r\n"), ["[CONNECTED] == true"])
        closed = check(Target("127.0.0.1", closing.port, send="PING\r\n"), ["[CONNECTED] == true", "len([BODY]) == 0"])

    assert resetting.received == closing.received == [b"PING\r\n"]
    assert (reset.error, reset.seen, reset.response.connected) == ("connection reset by 127.0.0.1", MAJOR_OUTAGE, True)
    assert (closed.success, closed.error) == (True, None), closed.reason


def test_a_slow_connection_alone_is_degraded_performance():
    with TCPServer("echo") as server:
        result = check(Target("127.0.0.1", server.port, send="x"), ["[CONNECTED] == true", "[RESPONSE_TIME] < 0"])

    assert (result.success, result.seen) == (False, DEGRADED)


def test_it_connects_over_ipv6():
    try:
        server = TCPServer("echo", host="::1")
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    with server:
        result = check(Target("::1", server.port, send="six"), ["[BODY] == pat(*six*)", "[IP] == ::1"])

    assert (result.success, result.error) == (True, None), result.reason


@pytest.fixture
def tls_context(certificates):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificates / "server.pem", certificates / "server.key")
    return context


def test_it_connects_with_tls_and_verifies_the_certificate(tls_context, certificates):
    with TCPServer("echo", tls=tls_context) as server:
        result = check(
            Target("localhost", server.port, send="hello", tls=True, verify=(certificates / "ca.pem").read_text()),
            ["[BODY] == echo: hello", "[CERTIFICATE_EXPIRATION] > 48h"],
        )

    assert (result.success, result.error) == (True, None), result.reason
    assert result.response.certificate_expiration_ms == pytest.approx(
        expires_in_ms(certificates / "server.pem"), abs=60_000
    )


def test_an_untrusted_certificate_is_refused_unless_verification_is_off(tls_context):
    with TCPServer("echo", tls=tls_context) as server:
        refused = check(Target("127.0.0.1", server.port, send="hello", tls=True), ["[CONNECTED] == true"])
        accepted = check(Target("127.0.0.1", server.port, send="hi", tls=True, verify=False), ["[BODY] == echo: hi"])

    assert refused.error is not None and refused.error.startswith("TLS error with 127.0.0.1: certificate verify failed")
    assert (refused.seen, refused.response.connected) == (MAJOR_OUTAGE, False)
    assert (accepted.success, accepted.error) == (True, None), accepted.reason


def test_tls_to_a_plain_server_is_an_error():
    with TCPServer("silent") as server:
        result = check(Target("127.0.0.1", server.port, tls=True, timeout_s=0.5), ["[CONNECTED] == true"])

    assert result.error == "timed out after 0.5 s"  # the handshake never came
    assert result.response.connected is False


def test_loopback_is_refused_when_private_addresses_are_not_allowed():
    with TCPServer("echo") as server:
        result = check(Target("127.0.0.1", server.port, send="x"), policy=AddressPolicy(allow_private=False))

    assert result.error == "refused: 127.0.0.1 is a loopback address (allow it with PULSE_ALLOW_PRIVATE_TARGETS)"
    assert (result.response.connected, result.response.ip) == (False, "127.0.0.1")
    assert server.accepted == 0  # not a packet


@pytest.mark.parametrize(
    ("host", "refused_as"),
    [
        ("169.254.169.254", "is a link-local/cloud-metadata address"),
        ("::ffff:169.254.169.254", "is a link-local/cloud-metadata address"),
        ("10.1.2.3", "is a private address"),
        ("64:ff9b::a01:203", "is a private address"),  # NAT64 form of 10.1.2.3
    ],
)
def test_a_refused_address_sees_no_packet(host, refused_as):
    started = time.monotonic()

    result = check(Target(host, 5432, timeout_s=10), policy=AddressPolicy(allow_private=False))

    assert time.monotonic() - started < 1  # no connection attempt: it would wait for the timeout
    assert result.error is not None and result.error.startswith("refused: ") and refused_as in result.error
    assert (result.response.connected, result.seen) == (False, MAJOR_OUTAGE)


def test_a_host_that_does_not_resolve_is_named():
    result = check(Target("no-such-host.invalid", 5432))

    assert result.error == "cannot resolve host no-such-host.invalid"
