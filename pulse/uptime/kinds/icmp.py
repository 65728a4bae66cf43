"""The ``icmp`` kind: send echo requests ("ping") to a host, under the address policy like any
connection, and judge the replies (`pulse.net.icmp` writes and reads the packets).

    - key: gateway
      name: Gateway
      kind: icmp
      host: gw.internal
      packets: 3                       # optional: 1 to 10 echo requests
      conditions: ["[CONNECTED] == true", "[RESPONSE_TIME] < 50", "[PACKET_LOSS] < 50"]

`[CONNECTED]` is true when at least one reply came back; `[RESPONSE_TIME]` is the average
round-trip time of the replies (as ping(8)'s "avg"), or the whole check's time when none came;
`[PACKET_LOSS]` the requests without a reply, in percent rounded to a whole number (0 to 100).
No reply at all is an error, an outage like a refused tcp connection. The requests go to the
first address of the host the policy allows; a refused address sees no packet.

The process needs permission to send them: an unprivileged ICMP socket where
``net.ipv4.ping_group_range`` admits its group, else a raw socket with CAP_NET_RAW. Without
either, `problems` refuses the component at ``pulse apply``, naming the sysctl that allows the
first (``sysctl -w net.ipv4.ping_group_range="0 2147483647"``); the workers run where the
configuration is applied, or are given the same permission. Its fields are stored in the
component's ``target`` column.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from pulse.models import utcnow
from pulse.net import AddressPolicy, AddressRefused, Response
from pulse.net import icmp as echo
from pulse.net.dial import address_family
from pulse.net.exchange import describe
from pulse.uptime.check import CheckResult, judge
from pulse.uptime.kinds.kind import CLEARED, Host, Kind, Stored, host

DEFAULT_CONDITIONS = ("[CONNECTED] == true",)
PLACEHOLDERS = frozenset({"[CONNECTED]", "[RESPONSE_TIME]", "[PACKET_LOSS]", "[IP]"})
PACKETS = 3  # echo requests a check sends by default


@dataclasses.dataclass(frozen=True)
class Target:
    """What one icmp check pings.

    Parameters:
      host: a host name or an IP address.
      packets: echo requests to send, 1 to 10.
      timeout_s: seconds; bounds the whole check (resolving aside, as for HTTP).
    """

    host: str
    packets: int = PACKETS
    timeout_s: float = 10.0


class Fields(Host):
    """An icmp check's fields in the configuration file."""

    packets: int = Field(PACKETS, ge=1, le=10)


def problems(spec: Fields) -> list[str]:
    if spec.host is None:
        return ["an icmp check needs a host"]
    try:
        v6 = ipaddress.ip_address(spec.host).version == 6
    except ValueError:
        v6 = False
    denied = echo.problem(socket.AF_INET6 if v6 else socket.AF_INET)
    return [denied] if denied else []


def stored(spec: Fields) -> dict[str, Any]:
    return CLEARED | {"target": {"host": spec.host, "packets": spec.packets}}


def target(row: Stored) -> Target:
    fields = row.target or {}
    return Target(str(fields.get("host", "")), int(fields.get("packets", PACKETS)), row.timeout_s)


def command_line(address: str, options: Mapping[str, Any]) -> Target:
    """The target of ``pulse check --icmp HOST``."""
    try:
        return Target(host(address), timeout_s=options["timeout_s"])
    except ValueError as e:
        raise ValueError(f"--icmp {address!r}: {e}") from None


def run(check: Target, condition_texts: Sequence[str], extract: dict[str, str], policy: AddressPolicy) -> CheckResult:
    """Ping the host and evaluate the conditions on the replies."""
    started_at = utcnow()
    response, error = exchange(check, policy)
    return judge(started_at, response, error, condition_texts or DEFAULT_CONDITIONS, extract)


def exchange(check: Target, policy: AddressPolicy) -> tuple[Response, str | None]:
    """Resolve the host, ping its first allowed address; never raises for a network problem or a
    missing permission. Returns the `Response` (``packet_loss`` set, ``connected`` when a reply
    came) and an error text, None when at least one reply came."""
    ip: str | None = None
    pings = echo.Pings(0, [])
    error: str | None = None
    started = time.perf_counter()
    try:
        family, address = _addresses(check.host, policy)[0]
        ip = str(address[0])
        policy.enforce(check.host, ip)  # the first address is allowed if any is
        with echo.open_socket(family) as sock:
            pings = echo.ping(sock, address, check.packets, check.timeout_s)
        if not pings.rtts_ms:
            unanswered = f"no echo reply from {ip} to {pings.sent} requests"
            if pings.error:  # a request could not be sent: nothing to wait for
                error = f"{unanswered}: {pings.error.strerror or type(pings.error).__name__}"
            else:
                error = f"timed out after {check.timeout_s} s: {unanswered}"
    except echo.Unavailable as e:
        error = str(e)
    except (AddressRefused, OSError, ValueError) as e:
        error = describe(e, check.host, check.timeout_s)
    elapsed_ms = (time.perf_counter() - started) * 1000
    rtts = pings.rtts_ms
    response = Response(
        response_time_ms=sum(rtts) / len(rtts) if rtts else elapsed_ms,
        connected=bool(rtts),
        ip=ip,
        packet_loss=pings.loss,
    )
    return response, error


def _addresses(name: str, policy: AddressPolicy) -> list[tuple[socket.AddressFamily, tuple[Any, ...]]]:
    """The addresses of ``name`` (family, socket address; at least one, or `socket.gaierror`),
    those the policy allows first."""
    found = [
        (socket.AddressFamily(family), address)
        for family, _, _, _, address in socket.getaddrinfo(name, None, address_family(), socket.SOCK_DGRAM)
    ]
    return sorted(found, key=lambda item: not _allows(policy, name, str(item[1][0])))


def _allows(policy: AddressPolicy, name: str, ip: str) -> bool:
    try:
        policy.enforce(name, ip)
    except AddressRefused:
        return False
    return True


KIND = Kind(
    name="icmp",
    fields=Fields,
    placeholders=PLACEHOLDERS,
    default_conditions=DEFAULT_CONDITIONS,
    problems=problems,
    stored=stored,
    target=target,
    run=run,
    flag="icmp",
    command_line=command_line,
)
