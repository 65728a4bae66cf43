"""A local TCP server whose behaviour the test picks, for tcp checks.

    with TCPServer("echo") as server:             # answers each read with what it read
        check(Target("127.0.0.1", server.port, send="ping"))
        assert server.accepted == 1

Modes: ``echo`` answers with what it received, prefixed by `ECHO_PREFIX`; ``banner`` sends
``banner`` as soon as it accepts (as SMTP and SSH servers do); ``silent`` accepts and never
answers; ``close`` reads what the client sends first, then closes the connection without a word,
and ``reset`` resets it instead (an RST, as a server that aborts does). ``host`` may be ``::1``
for IPv6. Pass an `ssl.SSLContext` (server side) for TLS on connect. ``accepted`` counts
connections accepted (TLS handshakes completed, with TLS); ``received`` is what they sent. Closing
stops every connection's thread at once: nothing waits on a timer.
"""

from __future__ import annotations

import socket
import ssl
import struct
import threading
from types import TracebackType

ECHO_PREFIX = b"echo: "


class TCPServer:
    def __init__(
        self, mode: str, *, host: str = "127.0.0.1", banner: bytes = b"", tls: ssl.SSLContext | None = None
    ) -> None:
        self.mode, self.banner, self.tls = mode, banner, tls
        self.listener = socket.create_server((host, 0), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.accepted = 0
        self.received: list[bytes] = []
        self.closing = threading.Event()
        self.connections: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> TCPServer:
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.closing.set()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes accept(), which close() alone does not
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            for connection in self.connections:
                connection.close()
        self.thread.join(5)

    def _serve(self) -> None:
        while not self.closing.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # closed
            with self.lock:
                self.connections.append(connection)
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()

    def _handle(self, connection: socket.socket) -> None:
        try:
            if self.tls is not None:
                connection = self.tls.wrap_socket(connection, server_side=True)
                with self.lock:
                    self.connections.append(connection)
            with self.lock:
                self.accepted += 1
            if self.mode == "banner":
                connection.sendall(self.banner)
            if self.mode == "silent":
                self.closing.wait()
                return
            if self.mode in ("close", "reset"):
                data = connection.recv(4096)
                with self.lock:
                    self.received.append(data)
                if self.mode == "reset":  # closed with a linger of 0: an RST, not a FIN
                    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return
            while data := connection.recv(4096):
                with self.lock:
                    self.received.append(data)
                if self.mode == "echo":
                    connection.sendall(ECHO_PREFIX + data)
        except (OSError, ssl.SSLError):
            pass  # the client hung up, or refused the certificate: the point of some tests
        finally:
            connection.close()
