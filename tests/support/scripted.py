"""A local server that plays a script of plain-text steps, then a TLS handshake: the STARTTLS
side of SMTP, IMAP and PostgreSQL (`SMTP`, `IMAP`, `POSTGRES`), or any misbehaviour a test writes.

    with ScriptedServer(SMTP, tls=context) as server:
        check(Target("localhost", server.port, starttls="smtp"))
        assert server.received[1] == b"STARTTLS\\r\\n"

A step is bytes to send, `LINE` to read one line, a number of bytes to read, a `Pause` (cut
short when the server closes), or `CLOSE` to hang up there. After the last
step comes the TLS handshake (with ``tls``; none without), then the server reads until the client
hangs up. ``received`` holds what each read step got (every connection's, in order);
``handshakes`` counts the handshakes completed. The lifecycle is `TCPServer`'s.
"""

from __future__ import annotations

import dataclasses
import socket
import ssl
from collections.abc import Sequence

from tests.support.tcpserver import TCPServer

LINE = "line"
CLOSE = "close"


@dataclasses.dataclass(frozen=True)
class Pause:
    seconds: float


Step = bytes | str | int | Pause

SMTP: tuple[Step, ...] = (
    b"220 mail.test ESMTP ready\r\n",
    LINE,  # EHLO
    b"250-mail.test greets you\r\n250-PIPELINING\r\n250-STARTTLS\r\n250 8BITMIME\r\n",
    LINE,  # STARTTLS
    b"220 2.0.0 Ready to start TLS\r\n",
)
IMAP: tuple[Step, ...] = (
    b"* OK [CAPABILITY IMAP4rev1 STARTTLS LOGINDISABLED] ready\r\n",
    LINE,  # a1 STARTTLS
    b"* CAPABILITY IMAP4rev1 STARTTLS\r\n",
    b"a1 OK Begin TLS negotiation now\r\n",
)
POSTGRES: tuple[Step, ...] = (8, b"S")  # the SSLRequest, then go ahead


class ScriptedServer(TCPServer):
    def __init__(self, script: Sequence[Step], *, tls: ssl.SSLContext | None = None, host: str = "127.0.0.1") -> None:
        super().__init__("script", host=host)
        self.script, self.context = tuple(script), tls
        self.handshakes = 0

    def _handle(self, connection: socket.socket) -> None:
        try:
            with self.lock:
                self.accepted += 1
            reader = connection.makefile("rb", buffering=0)
            for step in self.script:
                if isinstance(step, bytes):
                    connection.sendall(step)
                    continue
                if step == CLOSE:
                    return
                if isinstance(step, Pause):
                    self.closing.wait(step.seconds)
                    continue
                data = reader.readline() if step == LINE else reader.read(int(step))
                with self.lock:
                    self.received.append(data)
            if self.context is not None:
                connection = self.context.wrap_socket(connection, server_side=True)
                with self.lock:
                    self.connections.append(connection)
                    self.handshakes += 1
            while connection.recv(4096):
                pass
        except (OSError, ssl.SSLError):
            pass  # the client hung up, or refused the certificate
        finally:
            connection.close()
