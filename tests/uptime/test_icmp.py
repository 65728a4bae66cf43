"""The icmp check kind (`pulse.uptime.kinds.icmp`, packets by `pulse.net.icmp`): echo requests to
the loopback (a raw socket here, as root), to another host whose link the test cuts, from inside a
namespace that allows unprivileged ICMP sockets (and one that does not), under the address
policy; its fields at apply time; through the batch path into the component's status; and
`pulse check --icmp`.

The tests with other hosts (`tests.support.hosts`) skip without root or network namespaces; with
PULSE_REQUIRE_TOOLS=1 (CI) they fail instead.
"""

import errno
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from actors.uptime import checks
from pulse import configfile
from pulse.components.status import MAJOR_OUTAGE, OPERATIONAL
from pulse.errors import ConfigError
from pulse.models import Component, UptimeCheck
from pulse.net import AddressPolicy, Response
from pulse.net import icmp as echo
from pulse.uptime import conditions
from pulse.uptime.kinds import KINDS
from pulse.uptime.kinds.icmp import Target, run
from tests.support.cli import pulse
from tests.support.hosts import Host, HostsUnavailableError, ip
from tests.support.worker import ROOT

DEFAULT = AddressPolicy()  # loopback and private addresses allowed, as by default
SYSCTL = 'sysctl -w net.ipv4.ping_group_range="0 2147483647"'
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def check(target, texts=(), policy=DEFAULT):
    return run(target, list(texts), {}, policy)


def has_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.fixture
def host():
    """Another host (a network namespace linked to this one), closed at the end."""
    try:
        made = Host("icmp")
    except HostsUnavailableError as error:
        if os.environ.get("PULSE_REQUIRE_TOOLS") == "1":
            pytest.fail(f"{error}; PULSE_REQUIRE_TOOLS=1 requires it")
        pytest.skip(str(error))
    yield made
    made.close()


def forbid_icmp_sockets(monkeypatch, kinds=(socket.SOCK_DGRAM, socket.SOCK_RAW)):
    """This process may open no ICMP socket of these kinds: none, by default, as without the sysctl
    and without CAP_NET_RAW."""
    real = socket.socket

    def refuse(family=-1, kind=-1, proto=-1, fileno=None):
        if proto in (socket.IPPROTO_ICMP, socket.IPPROTO_ICMPV6) and kind in kinds:
            code = errno.EACCES if kind == socket.SOCK_DGRAM else errno.EPERM
            raise PermissionError(code, os.strerror(code))
        return real(family, kind, proto, fileno)

    monkeypatch.setattr(socket, "socket", refuse)


@pytest.fixture
def no_icmp_sockets(monkeypatch):
    forbid_icmp_sockets(monkeypatch)


def test_it_is_the_registry_entry_of_icmp():
    assert KINDS["icmp"].run is run
    assert sorted(KINDS) == ["dns", "http", "icmp", "tcp", "tls"]


def test_a_request_is_eight_bytes_of_header_and_the_payload_with_its_checksum():
    packet = echo.request(socket.AF_INET, 0x1234, 7, b"abc")

    assert (packet[0], packet[1], packet[4:8], packet[8:]) == (8, 0, b"\x12\x34\x00\x07", b"abc")
    assert echo.checksum(packet) == 0  # a packet with its checksum sums to 0xFFFF
    assert echo.request(socket.AF_INET6, 1, 2, b"x")[:4] == b"\x80\x00\x00\x00"  # the kernel sums ICMPv6


def test_a_reply_is_read_past_the_ip_header_of_a_raw_socket_and_anything_else_ignored():
    reply = bytes([0, 0, 0, 0]) + struct.pack("!HH", 9, 3) + b"token"
    ip_header = bytes([0x45]) + bytes(19)

    assert echo.reply(socket.AF_INET, socket.SOCK_RAW, ip_header + reply) == (9, 3, b"token")
    assert echo.reply(socket.AF_INET, socket.SOCK_DGRAM, reply) == (9, 3, b"token")
    assert echo.reply(socket.AF_INET, socket.SOCK_RAW, ip_header + b"\x08" + reply[1:]) is None  # a request
    assert echo.reply(socket.AF_INET, socket.SOCK_RAW, ip_header + b"\x03\x01" + reply[2:]) is None  # unreachable
    assert echo.reply(socket.AF_INET6, socket.SOCK_RAW, b"\x81" + reply[1:]) == (9, 3, b"token")
    assert echo.reply(socket.AF_INET6, socket.SOCK_DGRAM, b"\x81\x00") is None  # cut short


def test_it_pings_the_loopback():
    result = check(Target("127.0.0.1"), ["[CONNECTED] == true", "[PACKET_LOSS] == 0", "[RESPONSE_TIME] < 1000"])

    assert (result.success, result.error, result.seen) == (True, None, OPERATIONAL), result.reason
    assert (result.response.ip, result.response.packet_loss, result.response.status) == ("127.0.0.1", 0, None)
    assert [r.resolved for r in result.results][:2] == ["[CONNECTED] (true) == true", "[PACKET_LOSS] (0) == 0"]
    assert 0 < result.response.response_time_ms < 1000


def test_it_falls_back_to_a_raw_socket_where_the_group_range_refuses_a_datagram_one(monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("a raw socket needs CAP_NET_RAW (root)")
    forbid_icmp_sockets(monkeypatch, kinds=(socket.SOCK_DGRAM,))

    with echo.open_socket(socket.AF_INET) as sock:
        assert sock.type == socket.SOCK_RAW
    result = check(Target("127.0.0.1", packets=2), ["[PACKET_LOSS] == 0"])
    assert (result.success, result.error) == (True, None), result.reason


def test_it_pings_over_ipv6():
    if not has_ipv6_loopback():
        pytest.skip("no IPv6 loopback on this machine")

    result = check(Target("::1", packets=2), ["[CONNECTED] == true", "[IP] == ::1", "[PACKET_LOSS] == 0"])

    assert (result.success, result.error) == (True, None), result.reason


def test_packet_loss_is_a_whole_percent_and_response_time_the_average():
    pings = echo.Pings(sent=3, rtts_ms=[1.0, 4.0])
    response = Response(connected=True, packet_loss=pings.loss, response_time_ms=2.5)

    assert pings.loss == pytest.approx(100 / 3)
    outcome = conditions.evaluate(conditions.parse("[PACKET_LOSS] < 30"), response)
    assert (outcome.success, outcome.resolved) == (False, "[PACKET_LOSS] (33) < 30")
    assert echo.Pings(sent=0, rtts_ms=[]).loss == 100


def test_a_host_whose_link_is_cut_loses_every_packet(host):
    reached = check(Target(host.address, packets=3, timeout_s=2), ["[CONNECTED] == true"])
    assert (reached.success, reached.error, reached.response.packet_loss) == (True, None, 0), reached.reason

    ip("-n", host.namespace, "link", "set", f"pt{host.slot}h", "down")  # the cable is pulled at its end
    started = time.monotonic()
    cut = check(Target(host.address, packets=3, timeout_s=1), ["[CONNECTED] == true", "[PACKET_LOSS] < 50"])
    took = time.monotonic() - started

    assert 1 <= took < 3
    assert cut.error == f"timed out after 1 s: no echo reply from {host.address} to 3 requests"
    assert (cut.success, cut.seen, cut.response.connected, cut.response.packet_loss) == (
        False,
        MAJOR_OUTAGE,
        False,
        100,
    )
    assert [r.resolved for r in cut.results] == ["[CONNECTED] (false) == true", "[PACKET_LOSS] (100) < 50"]
    assert cut.reason == cut.error
    assert cut.response.response_time_ms >= 1000  # no reply: the whole check's time


UNPRIVILEGED = """
import json, socket, sys, time
from pulse import configfile
from pulse.errors import ConfigError
from pulse.net import AddressPolicy, icmp
from pulse.uptime.kinds.icmp import Target, run

FILE = "organizations: [{slug: acme, name: Acme, components: [{key: gw, name: Gateway, kind: icmp, host: %s}]}]"
try:
    configfile.load(FILE % sys.argv[1])
    refused = None
except ConfigError as e:
    refused = str(e)
if refused:
    print(json.dumps({"refused": refused}))
    sys.exit()
with icmp.open_socket(socket.AF_INET) as sock:
    kind = sock.type
found = {"kind": kind}
for target in sys.argv[1:]:
    started = time.monotonic()
    result = run(Target(target, packets=2, timeout_s=2), ["[PACKET_LOSS] == 0"], {}, AddressPolicy())
    quick = time.monotonic() - started < 1  # before the timeout
    found[target] = [result.success, result.error, result.response.ip, quick]
print(json.dumps(found))
"""


def test_unprivileged_sockets_where_the_namespace_allows_them(host):
    missing = [tool for tool in ("setpriv", "sysctl") if shutil.which(tool) is None]
    if missing:
        if os.environ.get("PULSE_REQUIRE_TOOLS") == "1":
            pytest.fail(f"{', '.join(missing)} not found (util-linux, procps); PULSE_REQUIRE_TOOLS=1 requires them")
        pytest.skip(f"{', '.join(missing)} not found (Debian packages util-linux, procps)")

    def without_raw_sockets(*targets):  # root without CAP_NET_RAW, inside the host
        command = ["setpriv", "--bounding-set", "-net_raw", sys.executable, "-c", UNPRIVILEGED, *targets]
        process = host.popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        return json.loads(out)

    targets = ["127.0.0.1", host.gateway] + (["::1"] if has_ipv6_loopback() else [])
    refused = without_raw_sockets(*targets)["refused"]  # a new namespace's range is "1 0": off
    assert "organizations[0].components[0]: ICMP echo is not permitted to this process" in refused
    assert SYSCTL in refused and 'now "1 0"' in refused

    ip("netns", "exec", host.namespace, "sysctl", "-w", "net.ipv4.ping_group_range=0 2147483647")
    unroutable = "10.213.255.254"  # no slot's: the host has no route to it (and no default route)
    found = without_raw_sockets(*targets, unroutable)

    assert found.pop("kind") == socket.SOCK_DGRAM
    error = f"no echo reply from {unroutable} to 2 requests: Network is unreachable"
    assert found.pop(unroutable) == [False, error, unroutable, True]  # not a packet left: nothing to wait for
    assert found == {target: [True, None, target, True] for target in targets}  # the gateway across the link


@pytest.mark.parametrize(
    ("address", "refused_as"),
    [
        ("127.0.0.1", "is a loopback address"),
        ("169.254.169.254", "is a link-local/cloud-metadata address"),
        ("10.1.2.3", "is a private address"),
        ("64:ff9b::a01:203", "is a private address"),  # NAT64 form of 10.1.2.3
    ],
)
def test_a_refused_address_sees_no_packet(monkeypatch, address, refused_as):
    def no_socket(family):
        raise AssertionError(f"an ICMP socket was opened to ping {address}")

    monkeypatch.setattr(echo, "open_socket", no_socket)

    result = check(Target(address, timeout_s=10), ["[CONNECTED] == true"], AddressPolicy(allow_private=False))

    assert result.error is not None and result.error.startswith(f"refused: {address} {refused_as}")
    assert (result.response.connected, result.response.ip, result.seen) == (False, address, MAJOR_OUTAGE)


def test_a_host_that_does_not_resolve_is_named():
    result = check(Target("no-such-host.invalid"))

    assert result.error == "cannot resolve host no-such-host.invalid"


FILE = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {key: gw, name: Gateway, kind: icmp, host: gw.internal, packets: 5, interval: 30s,
         conditions: ["[CONNECTED] == true", "[PACKET_LOSS] < 50"]}
      - {key: dns, name: Resolver, kind: icmp, host: "2001:db8::53"}
"""
PLACE = "organizations[0].components[0]"


def test_an_icmp_component_is_applied_from_the_file(database):
    configfile.apply(configfile.load(FILE))

    gw = Component.get(Component.key == "gw")
    assert (gw.type, gw.kind, gw.url, gw.interval_seconds) == ("ENDPOINT", "icmp", None, 30)
    assert gw.target == {"host": "gw.internal", "packets": 5}
    assert gw.conditions == ["[CONNECTED] == true", "[PACKET_LOSS] < 50"]
    resolver = Component.get(Component.key == "dns")
    assert (resolver.target, resolver.conditions) == ({"host": "2001:db8::53", "packets": 3}, ["[CONNECTED] == true"])


@pytest.mark.parametrize(
    "change, problem",
    [
        (("packets: 5", "packets: 11"), f"{PLACE}.packets: Input should be less than or equal to 10"),
        (("packets: 5", "packets: 0"), f"{PLACE}.packets: Input should be greater than or equal to 1"),
        (
            ("packets: 5", "packets: 5, port: 7"),
            f"{PLACE}: port is a field of tcp or tls checks, not of icmp ones",
        ),
        (("host: gw.internal, ", ""), f"{PLACE}: an icmp check needs a host"),
        (("host: gw.internal", "host: 'gw.internal:7'"), f"{PLACE}.host: not a host name or an IP address"),
        (
            ('"[PACKET_LOSS] < 50"', '"[STATUS] == 200"'),
            f"{PLACE}.conditions[1]: [STATUS] is not a placeholder of icmp checks"
            " (use [CONNECTED], [IP], [PACKET_LOSS], [RESPONSE_TIME])",
        ),
        (
            ("kind: icmp, host: gw.internal, packets: 5", "kind: tcp, host: gw.internal, port: 7, packets: 5"),
            f"{PLACE}: packets is a field of icmp checks, not of tcp ones",
        ),
    ],
)
def test_a_bad_icmp_field_is_refused_naming_its_place_and_reason(change, problem):
    with pytest.raises(ConfigError) as refused:
        configfile.load(FILE.replace(*change))

    assert problem in str(refused.value)


def test_without_permission_to_ping_apply_names_the_sysctl_and_a_check_says_so(no_icmp_sockets):
    with pytest.raises(ConfigError) as refused:
        configfile.load(FILE)

    for place in (PLACE, "organizations[0].components[1]"):  # IPv4 and IPv6 alike
        assert f"{place}: ICMP echo is not permitted to this process: allow its group" in str(refused.value)
    assert SYSCTL in str(refused.value) and "or give it CAP_NET_RAW" in str(refused.value)
    result = check(Target("127.0.0.1"))
    assert result.error is not None and SYSCTL in result.error
    assert (result.success, result.seen, result.response.connected) == (False, MAJOR_OUTAGE, False)


def test_an_icmp_component_drives_status_through_the_batch_path(make_component, target, monkeypatch):
    made = make_component(target, key="lo", name="Loopback", url=None, conditions=["[CONNECTED] == true"])
    Component.update(kind="icmp", target={"host": "127.0.0.1", "packets": 2}, failure_threshold=1).where(
        Component.id == made.id
    ).execute()

    checks.fn([[made.id, T0.isoformat()]])
    up = UptimeCheck.get()
    assert (up.success, up.outcome, up.status_code, up.error) == (True, "OPERATIONAL", None, None)
    assert up.condition_results[0]["resolved"] == "[CONNECTED] (true) == true"

    forbid_icmp_sockets(monkeypatch)
    checks.fn([[made.id, (T0 + timedelta(seconds=30)).isoformat()]])
    down = Component.get_by_id(made.id)
    assert (down.status, down.consecutive_failures) == ("MAJOR_OUTAGE", 1)
    failed = UptimeCheck.select().order_by(UptimeCheck.scheduled_at.desc()).first()
    assert failed.success is False and SYSCTL in failed.error
    assert failed.condition_results[0]["resolved"] == "[CONNECTED] (false) == true"


def test_pulse_check_icmp_pings_and_refuses_bad_input():
    passing = pulse("check", "--icmp", "127.0.0.1", "-c", "[PACKET_LOSS] == 0", "--json")
    report = json.loads(passing.stdout)
    assert passing.returncode == 0, passing.stderr
    assert (report["kind"], report["success"], report["status"], report["observed"]) == (
        "icmp",
        True,
        None,
        "OPERATIONAL",
    )
    assert [c["resolved"] for c in report["conditions"]] == ["[PACKET_LOSS] (0) == 0"]

    wrong = pulse("check", "--icmp", "127.0.0.1", "-c", "[BODY] == x")
    assert (wrong.returncode, wrong.stderr) == (2, "pulse: [BODY] == x: [BODY] is not a placeholder of icmp checks\n")
    bad = pulse("check", "--icmp", "127.0.0.1:7")
    assert bad.returncode == 2 and "--icmp '127.0.0.1:7': not a host name or an IP address" in bad.stderr
