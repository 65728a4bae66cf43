"""ICMP echo ("ping", RFC 792 for IPv4, RFC 4443 section 4 for IPv6), written with `struct`: a
request is 8 bytes of header (type, code, checksum, identifier, sequence number) and a payload.

`open_socket` opens the unprivileged kind of socket first, ``SOCK_DGRAM`` with ``IPPROTO_ICMP``
(or ``IPPROTO_ICMPV6``), which Linux allows a process whose group is in the sysctl
``net.ipv4.ping_group_range`` (one setting for both families, per network namespace; see the
Linux manual page icmp(7), "ping sockets"); the kernel then sets the identifier itself, fills in
the checksum, and hands the socket only the replies to it. Where that group range does not admit
the process, it falls back to a raw socket (``SOCK_RAW``), which needs CAP_NET_RAW (root in a
container has it) and sees every echo reply reaching the machine. Where neither opens it raises
`Unavailable`, whose text names the sysctl that allows the first.

`ping` sends the requests and matches each reply to its request by its sequence number and
payload (a random token per call; on a raw socket the identifier too), ignoring any other
ICMP message: the replies to other checks, the requests themselves as the loopback shows them,
errors.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import socket
import struct
import time

from pulse.errors import PulseError

ECHO_REQUEST = {socket.AF_INET: 8, socket.AF_INET6: 128}
ECHO_REPLY = {socket.AF_INET: 0, socket.AF_INET6: 129}
PROTOCOL = {socket.AF_INET: socket.IPPROTO_ICMP, socket.AF_INET6: socket.IPPROTO_ICMPV6}
PAYLOAD_SIZE = 56  # bytes, as ping(8) sends by default: 64 with the header
INTERVAL_S = 0.2  # seconds between two requests at most (ping(8) lets no ordinary user go faster)
SYSCTL = 'sysctl -w net.ipv4.ping_group_range="0 2147483647"'
_HEADER = struct.Struct("!BBHHH")  # type, code, checksum, identifier, sequence number
_RANGE = "/proc/sys/net/ipv4/ping_group_range"
_DENIED = (errno.EACCES, errno.EPERM)


class Unavailable(PulseError):  # noqa: N818 - the name callers use
    """Neither an unprivileged ICMP socket nor a raw one may be opened by this process."""


def open_socket(family: socket.AddressFamily) -> socket.socket:
    """An ICMP socket of ``family``: the unprivileged datagram kind where the group range allows
    it, else a raw one; `Unavailable` when neither is permitted (any other OSError as raised,
    e.g. no IPv6 on this machine)."""
    for kind in (socket.SOCK_DGRAM, socket.SOCK_RAW):
        try:
            return socket.socket(family, kind, PROTOCOL[family])
        except OSError as e:
            if e.errno not in _DENIED:
                raise
    raise Unavailable(
        f"ICMP echo is not permitted to this process: allow its group (gid {os.getgid()}) to open"
        f' unprivileged ICMP sockets with {SYSCTL} (now "{_group_range()}"), or give it CAP_NET_RAW'
    )


def problem(family: socket.AddressFamily = socket.AF_INET) -> str | None:
    """Why this process cannot send echo requests (the text of `Unavailable`), or None when it can."""
    try:
        open_socket(family).close()
    except Unavailable as e:
        return str(e)
    except OSError:
        return None  # not a matter of permission: the check itself will say what it is
    return None


def _group_range() -> str:
    try:
        with open(_RANGE, encoding="ascii") as f:
            return " ".join(f.read().split())
    except OSError:
        return "unknown"


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071): the ones' complement of the ones' complement sum of the
    16-bit words."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def request(family: socket.AddressFamily, identifier: int, sequence: int, payload: bytes) -> bytes:
    """An echo request. An ICMPv6 checksum covers a pseudo-header of addresses the kernel picks,
    so the kernel fills it in (RFC 3542 section 3.1); the IPv4 one is written here."""
    header = _HEADER.pack(ECHO_REQUEST[family], 0, 0, identifier, sequence)
    if family == socket.AF_INET6:
        return header + payload
    return _HEADER.pack(ECHO_REQUEST[family], 0, checksum(header + payload), identifier, sequence) + payload


def reply(family: socket.AddressFamily, kind: int, data: bytes) -> tuple[int, int, bytes] | None:
    """The identifier, sequence number and payload of an echo reply received on a socket of
    ``family`` and ``kind``, or None for any other message. A raw IPv4 socket receives the IP
    header too; the others only the ICMP message."""
    if family == socket.AF_INET and kind == socket.SOCK_RAW and data:
        data = data[(data[0] & 0x0F) * 4 :]
    if len(data) < _HEADER.size:
        return None
    message, code, _, identifier, sequence = _HEADER.unpack_from(data)
    if message != ECHO_REPLY[family] or code != 0:
        return None
    return identifier, sequence, data[_HEADER.size :]


@dataclasses.dataclass(frozen=True)
class Pings:
    """What `ping` observed.

    Parameters:
      sent: echo requests sent.
      rtts_ms: the round-trip time of each reply received, in milliseconds, in sequence order.
      error: the last error sending or receiving (the network unreachable…), or None.
    """

    sent: int
    rtts_ms: list[float]
    error: OSError | None = None

    @property
    def loss(self) -> float:
        """Requests without a reply, in percent of those to send (100 when none was sent)."""
        return 100.0 if not self.sent else 100.0 * (self.sent - len(self.rtts_ms)) / self.sent


def ping(sock: socket.socket, address: tuple[object, ...], packets: int, timeout_s: float) -> Pings:
    """Send ``packets`` echo requests to ``address`` (a socket address as `socket.getaddrinfo`
    gives it) and wait for their replies, for at most ``timeout_s`` seconds in all.

    The requests go at most `INTERVAL_S` apart, closer when the timeout is short, so that every
    one is sent within the first half of the timeout; the call returns once every reply is in
    (every reply to a request the kernel sent), else at the timeout.
    """
    family = socket.AddressFamily(sock.family)
    token = os.urandom(16)
    payload = (token * (PAYLOAD_SIZE // len(token) + 1))[:PAYLOAD_SIZE]
    identifier = int.from_bytes(token[:2], "big")  # the kernel replaces it on a datagram socket
    started = time.perf_counter()
    deadline = started + timeout_s
    spacing = min(INTERVAL_S, timeout_s / (2 * packets))
    sent_at: dict[int, float] = {}
    rtts: dict[int, float] = {}
    error: OSError | None = None
    unsent = 0  # requests the kernel refused to send (no route…): no reply to wait for
    next_send = started
    while len(rtts) + unsent < packets:
        now = time.perf_counter()
        if now >= deadline:
            break
        if len(sent_at) < packets and now >= next_send:
            sequence = len(sent_at) + 1
            sent_at[sequence] = time.perf_counter()
            next_send = now + spacing
            try:
                sock.sendto(request(family, identifier, sequence, payload), address)
            except OSError as e:
                error, unsent = e, unsent + 1  # counted as lost, as ping(8) does
            continue
        wait = (deadline if len(sent_at) == packets else min(next_send, deadline)) - now
        sock.settimeout(max(wait, 0.001))
        try:
            data, source = sock.recvfrom(65536)
        except TimeoutError:
            continue
        except OSError as e:  # an ICMP error reported on a datagram socket
            error = e
            continue
        received = time.perf_counter()
        found = reply(family, sock.type, data)
        if found is None or source[0] != address[0]:
            continue
        echoed_id, sequence, echoed = found
        if echoed != payload or sequence not in sent_at or sequence in rtts:
            continue
        if sock.type == socket.SOCK_RAW and echoed_id != identifier:
            continue
        rtts[sequence] = (received - sent_at[sequence]) * 1000
    return Pings(len(sent_at), [rtts[s] for s in sorted(rtts)], error)
