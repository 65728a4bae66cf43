"""Which addresses Pulse may connect to: every outgoing request (uptime checks and notification
deliveries alike) is held to one `AddressPolicy`, checked on the address actually connected to."""

from __future__ import annotations

import dataclasses
import ipaddress
from typing import TYPE_CHECKING

from pulse.errors import PulseError

if TYPE_CHECKING:
    from pulse.config import Settings

# Cloud metadata services: AWS (IPv4 and IPv6), GCP, Azure, DigitalOcean, OpenStack...
# (169.254.169.254), AWS ECS (169.254.170.2), Alibaba (100.100.100.200), Oracle (192.0.0.192),
# Azure WireServer (168.63.129.16, a public address).
_METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200", "192.0.0.192", "168.63.129.16")
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT (RFC 6598)
_LOW32 = 0xFFFFFFFF
# IPv6 prefixes that carry an IPv4 address, and where it sits (RFC 6052 section 2.2).
_EMBEDDING = (
    (ipaddress.ip_network("64:ff9b::/96"), lambda value: value & _LOW32),
    (ipaddress.ip_network("::ffff:0:0:0/96"), lambda value: value & _LOW32),  # SIIT, IPv4-translated
    # A /48 NAT64 prefix: the IPv4 address in bits 48-63 and 72-87 (bits 64-71 are the "u" octet).
    (ipaddress.ip_network("64:ff9b:1::/48"), lambda value: ((value >> 64) & 0xFFFF) << 16 | (value >> 40) & 0xFFFF),
    (ipaddress.ip_network("::/96"), lambda value: value & _LOW32),  # IPv4-compatible
)


class AddressRefused(PulseError):  # noqa: N818 - the name callers use
    """The address is not allowed by the `AddressPolicy`. The text names host, class and setting."""


@dataclasses.dataclass(frozen=True)
class AddressPolicy:
    """Which addresses a request may connect to; public addresses always may.

    Parameters:
      allow_private: loopback, RFC 1918, unique-local IPv6, CGNAT and other non-public addresses
        (on by default: self-hosted targets are common).
      allow_link_local: 169.254.0.0/16, fe80::/10 and the cloud metadata addresses.
    """

    allow_private: bool = True
    allow_link_local: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> AddressPolicy:
        return cls(allow_private=settings.allow_private_targets, allow_link_local=settings.allow_link_local_targets)

    def enforce(self, host: str, ip: str) -> None:
        """Raise `AddressRefused` if ``ip`` (an address ``host`` resolved to) is not allowed."""
        address = embedded(ipaddress.ip_address(ip.split("%", 1)[0]))
        name = ip if host == ip else f"{host} ({ip})"
        if address in _METADATA or address.is_link_local:
            if self.allow_link_local:
                return
            raise AddressRefused(
                f"refused: {name} is a link-local/cloud-metadata address (allow it with PULSE_ALLOW_LINK_LOCAL_TARGETS)"
            )
        if address.is_global or self.allow_private:
            return
        raise AddressRefused(f"refused: {name} is {_private_kind(address)} (allow it with PULSE_ALLOW_PRIVATE_TARGETS)")


def embedded(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The IPv4 address an IPv6 address carries, by which it is judged, or the address itself.

    A packet to such an address may reach the IPv4 address it embeds: through a NAT64 gateway
    (64:ff9b::/96, RFC 6052; 64:ff9b:1::/48, RFC 8215), a SIIT translator (::ffff:0:a.b.c.d,
    RFC 6145), a 6to4 relay (2002::/16, RFC 3056), or as IPv4-mapped (::ffff:a.b.c.d) and
    IPv4-compatible (::a.b.c.d, deprecated) addresses.
    """
    if isinstance(address, ipaddress.IPv4Address):
        return address
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.is_loopback or address.is_unspecified:  # ::1 and ::, not IPv4-compatible
        return address
    value = int(address)
    for network, extract in _EMBEDDING:
        if address in network:
            return ipaddress.IPv4Address(extract(value))
    return address


def _private_kind(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if address.is_loopback:
        return "a loopback address"
    if address.is_unspecified:
        return "an unspecified (this host) address"
    if address in _SHARED:
        return "a shared (CGNAT) address"
    if address.is_private:
        return "a private address"
    return "a non-public address"
