"""The address policy on IPv6 addresses that carry an IPv4 address: judged by the IPv4 address.

Only the policy's decision is tested, which comes before any connection: no packet is sent. The
one test through `fetch` runs in a network namespace with nothing but loopback (`unshare -n`), so
a regression would fail as "network unreachable" rather than reach anything.
"""

import re
import shlex
import shutil
import subprocess
import sys

import pytest

from pulse.net import AddressPolicy, AddressRefused
from tests.support.worker import ROOT

STRICT = AddressPolicy(allow_private=False, allow_link_local=False)

EMBEDDING = {
    "NAT64": "64:ff9b::{}",
    "NAT64 /48": None,  # built below: the address is split around the "u" octet
    "IPv4-mapped": "::ffff:{}",
    "IPv4-compatible": "::{}",
    "SIIT": "::ffff:0:{}",
}


def embed(form: str, ipv4: str) -> str:
    a, b, c, d = (int(part) for part in ipv4.split("."))
    if form == "6to4":
        return f"2002:{a:02x}{b:02x}:{c:02x}{d:02x}::1"
    if form == "NAT64 /48":
        return f"64:ff9b:1:{a:02x}{b:02x}:{c:02x}:{d:02x}00::"
    return EMBEDDING[form].format(ipv4)


FORMS = [*EMBEDDING, "6to4"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    ("ipv4", "kind", "setting"),
    [
        ("127.0.0.1", "a loopback address", "PULSE_ALLOW_PRIVATE_TARGETS"),
        ("10.1.2.3", "a private address", "PULSE_ALLOW_PRIVATE_TARGETS"),
        ("192.168.0.1", "a private address", "PULSE_ALLOW_PRIVATE_TARGETS"),
        ("100.64.0.1", "a shared (CGNAT) address", "PULSE_ALLOW_PRIVATE_TARGETS"),
        ("169.254.169.254", "a link-local/cloud-metadata address", "PULSE_ALLOW_LINK_LOCAL_TARGETS"),
        ("169.254.170.2", "a link-local/cloud-metadata address", "PULSE_ALLOW_LINK_LOCAL_TARGETS"),
        ("100.100.100.200", "a link-local/cloud-metadata address", "PULSE_ALLOW_LINK_LOCAL_TARGETS"),
    ],
)
def test_an_embedded_ipv4_address_is_judged_as_itself(form, ipv4, kind, setting):
    address = embed(form, ipv4)
    with pytest.raises(AddressRefused) as refused:
        STRICT.enforce("h", address)
    assert str(refused.value) == f"refused: h ({address}) is {kind} (allow it with {setting})"


@pytest.mark.parametrize("form", FORMS)
def test_an_embedded_public_ipv4_address_is_allowed(form):
    STRICT.enforce("h", embed(form, "8.8.8.8"))


@pytest.mark.parametrize(
    ("address", "kind"), [("::1", "a loopback address"), ("::", "an unspecified (this host) address")]
)
def test_the_ipv6_loopback_and_unspecified_addresses_are_not_read_as_ipv4(address, kind):
    with pytest.raises(AddressRefused, match=re.escape(f"is {kind}")):
        STRICT.enforce("h", address)


def test_fetch_refuses_an_embedded_address_before_connecting():
    unshare = shutil.which("unshare")
    probe = [unshare, "-n", "sh", "-c", "ip link set lo up"]
    if unshare is None or subprocess.run(probe, capture_output=True).returncode != 0:
        pytest.skip("unshare -n (and ip) are not available: they need root or user namespaces")
    program = (
        "from pulse.net import AddressPolicy, Request, fetch\n"
        "for url in ('http://[64:ff9b::7f00:1]/', 'http://[2002:a9fe:a9fe::1]/', 'http://[::ffff:0:a00:1]:8080/'):\n"
        "    response, error = fetch(Request('GET', url, timeout_s=2), AddressPolicy(allow_private=False))\n"
        "    print(error, response.connected)\n"
    )
    inside = f"ip link set lo up && exec {shlex.quote(sys.executable)} -c {shlex.quote(program)}"
    result = subprocess.run([unshare, "-n", "sh", "-c", inside], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith("refused: ") and line.endswith(" False") for line in lines), lines
