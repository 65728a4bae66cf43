"""A local DNS server answering from a small zone, over UDP and TCP on one port, for dns checks.

    with DNSServer({("acme.test.", "A"): ["192.0.2.10"]}) as server:
        check(Target("acme.test", "A", ("127.0.0.1", server.port)))
        assert server.queries == [("udp", "acme.test.", "A")]

Built on dnspython (`dns.message`), so the wire format is dnspython's, not the test's. A name in the
zone with another type answers NOERROR with no records; a name not in it, NXDOMAIN; a name in
``servfail``, SERVFAIL; a name outside ``origin`` (the zone's apex, the root by default), REFUSED. A
name with a CNAME answers the CNAME chain for any other type, as an authoritative server such as
BIND does: followed while it stays within ``origin`` and until a name comes again (a loop), then the
records at its end, or NXDOMAIN when it ends at a name of the zone that does not exist (RFC 6604).
Replies claim recursion (RA) like a resolver's unless ``recursive`` is False, an authoritative-only
server's. A UDP reply over 512 bytes (the limit of a query without EDNS, RFC 1035 section 4.2.1) is
sent empty with the TC bit set, so the client must ask again over TCP. With ``silent`` the server
reads each query and never answers. ``decoys`` are datagrams sent before each UDP reply (or instead
of it, when silent), which a client must pass over: ``wrong id``, a forged NXDOMAIN reply with
another ID (an off-path spoofer's guess, or a late answer to an earlier query); ``other port``, the
same forgery with the right ID from another port; ``malformed``, the reply cut short. ``queries`` is
every question read: (transport, name, type). One thread serves both sockets; closing wakes it
through a socketpair, not a timer.
"""

from __future__ import annotations

import select
import socket
import struct
import threading
from types import TracebackType

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.rrset

UDP_LIMIT = 512  # bytes of a UDP reply to a query without EDNS
Zone = dict[tuple[str, str], list[str]]  # (name with its final dot, type): the records' texts


class DNSServer:
    def __init__(
        self,
        zone: Zone | None = None,
        *,
        host: str = "127.0.0.1",
        servfail: tuple[str, ...] = (),
        silent: bool = False,
        decoys: tuple[str, ...] = (),
        origin: str = ".",
        recursive: bool = True,
    ) -> None:
        self.zone = zone or {}
        self.origin = dns.name.from_text(origin)
        self.ra = dns.flags.RA if recursive else dns.flags.Flag(0)
        self.servfail = {dns.name.from_text(name) for name in servfail}
        self.silent = silent
        self.decoys = decoys
        self.queries: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.udp, self.tcp = _bound_pair(host, family)
        self.port = self.udp.getsockname()[1]
        self.other = socket.socket(family, socket.SOCK_DGRAM)  # the other port of the decoys
        self.other.bind((host, 0))
        self.wake_read, self.wake_write = socket.socketpair()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> DNSServer:
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.wake_write.send(b"x")
        self.thread.join(5)
        for sock in (self.udp, self.tcp, self.other, self.wake_read, self.wake_write):
            sock.close()

    def seen(self, transport: str) -> list[tuple[str, str]]:
        """The questions read over ``transport`` (udp or tcp): (name, type)."""
        with self.lock:
            return [(name, kind) for over, name, kind in self.queries if over == transport]

    def _serve(self) -> None:
        while True:
            readable, _, _ = select.select([self.udp, self.tcp, self.wake_read], [], [])
            if self.wake_read in readable:
                return
            if self.udp in readable:
                data, peer = self.udp.recvfrom(65535)
                query = self._read(data, "udp")
                reply = self._reply(query, "udp")
                for sock, datagram in self._decoys(query, reply):
                    sock.sendto(datagram, peer)
                if not self.silent:
                    self.udp.sendto(reply, peer)
            if self.tcp in readable:
                connection, _ = self.tcp.accept()
                with connection:
                    self._answer_tcp(connection)

    def _answer_tcp(self, connection: socket.socket) -> None:
        connection.settimeout(5)
        try:
            (length,) = struct.unpack("!H", _read(connection, 2))
            reply = self._reply(self._read(_read(connection, length), "tcp"), "tcp")
            if not self.silent:
                connection.sendall(struct.pack("!H", len(reply)) + reply)
        except (OSError, struct.error):
            pass  # the client went away

    def _read(self, data: bytes, transport: str) -> dns.message.Message:
        query = dns.message.from_wire(data)
        question = query.question[0]
        with self.lock:
            self.queries.append((transport, question.name.to_text(), dns.rdatatype.to_text(question.rdtype)))
        return query

    def _decoys(self, query: dns.message.Message, reply: bytes) -> list[tuple[socket.socket, bytes]]:
        """The decoys to send before ``reply``: (from which socket, the datagram)."""
        forged = dns.message.make_response(query)
        forged.set_rcode(dns.rcode.NXDOMAIN)
        spoofed = forged.to_wire()
        forged.id = (query.id + 1) % 65536
        made = {
            "wrong id": (self.udp, forged.to_wire()),
            "other port": (self.other, spoofed),
            "malformed": (self.udp, reply[:-1]),
        }
        return [made[decoy] for decoy in self.decoys]

    def _reply(self, query: dns.message.Message, transport: str) -> bytes:
        question = query.question[0]
        response = dns.message.make_response(query)
        response.flags |= self.ra
        if question.name in self.servfail:
            response.set_rcode(dns.rcode.SERVFAIL)
        else:
            self._answer(response, question.name, question.rdtype)
        wire = response.to_wire()
        if transport == "udp" and len(wire) > UDP_LIMIT:
            truncated = dns.message.make_response(query)
            truncated.flags |= dns.flags.TC | self.ra
            wire = truncated.to_wire()
        return wire

    def _answer(self, response: dns.message.Message, name: dns.name.Name, rdtype: int) -> None:
        if not name.is_subdomain(self.origin):
            response.set_rcode(dns.rcode.REFUSED)
            return
        names = {dns.name.from_text(owner) for owner, _ in self.zone}
        seen = set()
        while name.is_subdomain(self.origin) and name not in seen:
            seen.add(name)
            if name not in names:
                response.set_rcode(dns.rcode.NXDOMAIN)
                return
            records = self._records(name, rdtype) or self._records(name, dns.rdatatype.CNAME)
            if records is None:
                return  # the name exists, without records of that type: NOERROR, no answer
            response.answer.append(records)
            if records.rdtype != dns.rdatatype.CNAME or rdtype == dns.rdatatype.CNAME:
                return
            name = records[0].target

    def _records(self, name: dns.name.Name, rdtype: int) -> dns.rrset.RRset | None:
        texts = self.zone.get((name.to_text(), dns.rdatatype.to_text(rdtype)))
        return None if texts is None else dns.rrset.from_text_list(name, 300, "IN", rdtype, texts)


def _bound_pair(host: str, family: socket.AddressFamily) -> tuple[socket.socket, socket.socket]:
    """A UDP socket and a listening TCP socket on the same free port."""
    for _ in range(20):
        udp = socket.socket(family, socket.SOCK_DGRAM)
        udp.bind((host, 0))
        tcp = socket.socket(family, socket.SOCK_STREAM)
        try:
            tcp.bind((host, udp.getsockname()[1]))
        except OSError:  # the TCP port is taken: try another
            udp.close()
            tcp.close()
            continue
        tcp.listen()
        return udp, tcp
    raise OSError("no port free for both UDP and TCP")


def _read(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data
