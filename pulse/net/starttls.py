"""STARTTLS: the plain-text exchange that turns a connection into one ready for a TLS handshake,
for the protocols that offer TLS that way (`PROTOCOLS`).

- ``smtp`` (RFC 3207): the server's 220 greeting, ``EHLO``, a 250 reply naming STARTTLS among its
  extensions, ``STARTTLS``, a 220 reply.
- ``imap`` (RFC 9051 6.2.1, RFC 3501): the server's ``* OK`` greeting, ``a1 STARTTLS``, ``a1 OK``
  (untagged lines may come before it).
- ``postgres`` (PostgreSQL's "Frontend/Backend Protocol", "SSL Session Encryption"): the 8-byte
  SSLRequest (length 8, code 80877103), answered by one byte, ``S`` to go ahead, ``N`` for no SSL.

`negotiate` runs one of them on a connected socket, bounded by the caller's deadline (each read
waits at most the time left, so a server that trickles bytes cannot hold it longer), and raises
`StartTLSError` naming the host and what it sent when the server does not speak the protocol or
refuses; what the server sent is cut short and shown escaped, never as written. A server that
sends anything after its go-ahead (before the handshake) is refused: those bytes would have been
read as if they had come over TLS (as in CVE-2011-0411).
"""

from __future__ import annotations

import re
import socket
import struct
from collections.abc import Callable

from pulse.net.urls import FetchError

PROTOCOLS = ("smtp", "imap", "postgres")
MAX_READ = 64 * 1024  # bytes the server may send before its go-ahead
MAX_LINE = 4096  # bytes in one line (SMTP's limit is 512, IMAP's is larger)
MAX_LINES = 100  # lines in one reply (SMTP) or before the tagged one (IMAP)
SHOWN = 80  # characters of a server's answer shown in an error
SSL_REQUEST = struct.pack("!ii", 8, 80877103)  # PostgreSQL's SSLRequest: length, then 1234 << 16 | 5679

_SMTP_LINE = re.compile(rb"(\d{3})([ -])(.*)", re.DOTALL)


class StartTLSError(FetchError):
    """The server does not speak the protocol, or refused STARTTLS; the text names the host."""


class _Reader:
    """Lines (or bytes) from the socket, each read waiting at most the time left, at most
    `MAX_READ` in all."""

    def __init__(self, sock: socket.socket, left: Callable[[], float], host: str, protocol: str, timeout_s: float):
        self.sock, self.left, self.host, self.protocol, self.timeout_s = sock, left, host, protocol, timeout_s
        self.buffer = b""
        self.total = 0

    def _more(self) -> None:
        try:
            self.sock.settimeout(self.left())
            data = self.sock.recv(4096)
        except TimeoutError:
            raise FetchError(
                f"timed out after {self.timeout_s} s waiting for the {self.protocol} answer from {self.host}"
            ) from None
        if not data:
            raise StartTLSError(f"{self.host} closed the connection during {self.protocol} STARTTLS")
        self.total += len(data)
        if self.total > MAX_READ:
            raise StartTLSError(f"{self.host} sent more than {MAX_READ} bytes before {self.protocol} STARTTLS")
        self.buffer += data

    def line(self) -> bytes:
        """One line, without its line ending."""
        while b"\n" not in self.buffer:
            if len(self.buffer) > MAX_LINE:
                raise StartTLSError(f"{self.host} sent a line of more than {MAX_LINE} bytes ({self.protocol})")
            self._more()
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.rstrip(b"\r")

    def byte(self) -> bytes:
        if not self.buffer:
            self._more()
        first, self.buffer = self.buffer[:1], self.buffer[1:]
        return first

    def unexpected(self, got: bytes, expected: str = "") -> StartTLSError:
        wanted = f": expected {expected}" if expected else ""
        return StartTLSError(f"{self.host} does not speak {self.protocol}{wanted}, got {shown(got)}")

    def done(self) -> None:
        """Nothing may follow the go-ahead before the handshake."""
        if self.buffer:
            raise StartTLSError(f"{self.host} sent data after its {self.protocol} STARTTLS answer")


def shown(data: bytes) -> str:
    """What a server sent, cut to `SHOWN` characters, quoted and escaped (no control characters)."""
    text = data.decode("utf-8", errors="replace")
    return repr(text[:SHOWN] + ("..." if len(text) > SHOWN else ""))


def negotiate(protocol: str, sock: socket.socket, left: Callable[[], float], host: str, timeout_s: float) -> None:
    """Run ``protocol``'s STARTTLS exchange on ``sock``, connected to ``host``; return when the
    server is ready for the TLS handshake.

    Parameters:
      protocol: one of `PROTOCOLS`.
      left: seconds left before the caller's deadline (raising `TimeoutError` when none are).
      timeout_s: the caller's whole timeout, in seconds, named in the error when it runs out.
    """
    reader = _Reader(sock, left, host, protocol, timeout_s)
    {"smtp": _smtp, "imap": _imap, "postgres": _postgres}[protocol](reader)
    reader.done()


def _send(reader: _Reader, data: bytes) -> None:
    reader.sock.settimeout(reader.left())
    reader.sock.sendall(data)


def _smtp_reply(reader: _Reader, expected: str) -> tuple[bytes, list[bytes]]:
    """An SMTP reply: its code and the text of each of its lines (``250-A``, ``250 B``)."""
    code, texts = b"", list[bytes]()
    while True:
        line = reader.line()
        found = _SMTP_LINE.fullmatch(line)
        if found is None or (texts and found.group(1) != code):
            raise reader.unexpected(line, expected)
        code = found.group(1)
        texts.append(found.group(3))
        if found.group(2) == b" ":
            return code, texts
        if len(texts) >= MAX_LINES:
            raise StartTLSError(f"{reader.host} sent an smtp reply of more than {MAX_LINES} lines")


def _smtp(reader: _Reader) -> None:
    code, texts = _smtp_reply(reader, "a 220 greeting")
    if code != b"220":
        raise reader.unexpected(code + b" " + texts[-1], "a 220 greeting")
    local = reader.sock.getsockname()[0]
    literal = f"IPv6:{local}" if ":" in local else local  # RFC 5321 4.1.3 address literal
    _send(reader, f"EHLO [{literal}]\r\n".encode())
    code, texts = _smtp_reply(reader, "a reply to EHLO")
    if code != b"250":
        raise StartTLSError(f"{reader.host} refused EHLO: {shown(code + b' ' + texts[-1])}")
    if not any(text.split()[:1] == [b"STARTTLS"] for text in (t.upper() for t in texts[1:])):
        raise StartTLSError(f"{reader.host} does not offer STARTTLS (smtp)")
    _send(reader, b"STARTTLS\r\n")
    code, texts = _smtp_reply(reader, "a reply to STARTTLS")
    if code != b"220":
        raise StartTLSError(f"{reader.host} refused STARTTLS: {shown(code + b' ' + texts[-1])}")


def _imap(reader: _Reader) -> None:
    greeting = reader.line()
    if not greeting.upper().startswith(b"* OK"):
        if greeting.upper().startswith((b"* PREAUTH", b"* BYE")):
            raise StartTLSError(f"{reader.host} refused STARTTLS (imap): {shown(greeting)}")
        raise reader.unexpected(greeting, "a '* OK' greeting")
    _send(reader, b"a1 STARTTLS\r\n")
    for _ in range(MAX_LINES):
        line = reader.line()
        if line.startswith(b"* "):
            continue  # an untagged answer (CAPABILITY…) before the tagged one
        if line.upper().startswith(b"A1 OK"):
            return
        if line.upper().startswith((b"A1 NO", b"A1 BAD")):
            raise StartTLSError(f"{reader.host} refused STARTTLS (imap): {shown(line)}")
        raise reader.unexpected(line, "a reply to 'a1 STARTTLS'")
    raise StartTLSError(f"{reader.host} never answered 'a1 STARTTLS' (imap)")


def _postgres(reader: _Reader) -> None:
    _send(reader, SSL_REQUEST)
    answer = reader.byte()
    if answer == b"N":
        raise StartTLSError(f"{reader.host} does not offer SSL (postgres answered N to SSLRequest)")
    if answer != b"S":
        raise reader.unexpected(answer + reader.buffer, "S or N in answer to SSLRequest")
