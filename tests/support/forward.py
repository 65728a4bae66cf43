"""A TCP relay: a server (RabbitMQ, PostgreSQL, a target) reached through another address, or one
that comes up when the test says."""

from __future__ import annotations

import socket
import threading
from types import TracebackType


class Relay:
    """Listens on ``listen`` (address, port) and pipes each connection to ``target`` (address, port),
    until closed. A connection the target refuses is closed at once; the relay keeps listening."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int]) -> None:
        self.target = target
        self.server = socket.create_server(listen)
        self.port: int = self.server.getsockname()[1]
        self.lock = threading.Lock()
        self.connections: set[socket.socket] = set()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                return
            with upstream:
                upstream.settimeout(None)
                with self.lock:
                    self.connections |= {client, upstream}
                back = threading.Thread(target=self._pipe, args=(upstream, client), daemon=True)
                back.start()
                self._pipe(client, upstream)
                back.join()
                with self.lock:
                    self.connections -= {client, upstream}

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        """Stop listening and cut every connection."""
        self.server.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept (close alone would not)
        self.server.close()
        with self.lock:
            for sock in self.connections:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()
