"""Connecting under the `AddressPolicy`: the one place a TCP connection out of Pulse is made, for
HTTP (`pulse.net.exchange`) and for every other check kind (`pulse.uptime.kinds`) alike.

`Dial.open` resolves the host, checks every resolved address against the policy and connects
only to an allowed one, so the address checked is the address connected to (DNS rebinding cannot
slip past it) and a refused address sees no packet at all. `context` gives the TLS context for a
verification choice, made once per process.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from pulse.net.policy import AddressPolicy, AddressRefused
from pulse.net.urls import FetchError


@dataclasses.dataclass
class Dial:
    """One connection to ``host``:``port``; ``ip`` is the address tried last, the address
    connected to once `open` returned (None until an address was tried)."""

    host: str
    port: int
    ip: str | None = None

    def open(self, policy: AddressPolicy, left: Callable[[], float], timeout_s: float) -> socket.socket:
        """Connect to the first allowed address of the host; raise `AddressRefused` if none is.

        Parameters:
          left: seconds left before the caller's deadline (raising `TimeoutError` when none are):
            each attempt waits at most that long.
          timeout_s: the caller's whole timeout, in seconds, named in the error when it runs out.
        """
        refused: AddressRefused | None = None
        error: OSError | None = None
        for family, kind, proto, _, address in socket.getaddrinfo(
            self.host, self.port, address_family(), socket.SOCK_STREAM
        ):
            ip = str(address[0])
            try:
                policy.enforce(self.host, ip)
            except AddressRefused as e:
                self.ip, refused = ip, refused or e
                continue
            self.ip = ip
            sock = socket.socket(family, kind, proto)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(left())
                sock.connect(address)
            except OSError as e:
                sock.close()
                error = e
                continue
            self.ip = sock.getpeername()[0]
            return sock
        if isinstance(error, TimeoutError):
            raise FetchError(f"timed out after {timeout_s} s connecting to {self.host}")
        if error is not None:
            raise error
        if refused is not None:
            raise refused
        raise OSError(f"{self.host} resolves to no address")


def countdown(timeout_s: float) -> Callable[[], float]:
    """Seconds left of ``timeout_s`` from now, each time it is called (for `Dial.open`'s ``left``
    and every read after it); `TimeoutError` once none are."""
    deadline = time.monotonic() + timeout_s

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("deadline reached")
        return remaining

    return left


def expiration_ms(sock: ssl.SSLSocket) -> float | None:
    """Milliseconds until the peer's certificate expires; None when it was not verified."""
    not_after = (sock.getpeercert() or {}).get("notAfter")
    if isinstance(not_after, str):
        return (ssl.cert_time_to_seconds(not_after) - time.time()) * 1000
    return None


def not_after(sock: ssl.SSLSocket) -> datetime | None:
    """When the peer's certificate expires (its notAfter, UTC); None when it was not verified."""
    text = (sock.getpeercert() or {}).get("notAfter")
    if isinstance(text, str):
        return datetime.fromtimestamp(ssl.cert_time_to_seconds(text), UTC)
    return None


_contexts: dict[tuple[bool | str, str | None], ssl.SSLContext] = {}
_contexts_lock = threading.Lock()


def context(verify: bool | str, *, alpn: str | None = None) -> ssl.SSLContext:
    """The TLS context for ``verify`` (True: the system's CA certificates; a path: that CA bundle
    or directory; False: no verification) offering the ALPN protocol ``alpn``, made once per
    process (making one costs milliseconds)."""
    key = (verify or False, alpn)
    found = _contexts.get(key)
    if found is None:
        with _contexts_lock:
            found = _contexts.get(key)
            if found is None:
                found = _contexts[key] = _new_context(verify or False, alpn)
    return found


def _new_context(verify: bool | str, alpn: str | None) -> ssl.SSLContext:
    if verify is True:
        made = ssl.create_default_context()
    elif verify is False:
        made = ssl.create_default_context()
        made.check_hostname = False
        made.verify_mode = ssl.CERT_NONE
    elif os.path.isdir(verify):
        made = ssl.create_default_context(capath=verify)
    else:
        made = ssl.create_default_context(cafile=verify)
    if alpn is not None:
        made.set_alpn_protocols([alpn])
    return made


@functools.cache
def address_family() -> socket.AddressFamily:
    """Any family where IPv6 works, else IPv4 only (as urllib3 decides)."""
    if socket.has_ipv6:
        try:
            with socket.socket(socket.AF_INET6) as probe:
                probe.bind(("::1", 0))
        except OSError:
            pass
        else:
            return socket.AF_UNSPEC
    return socket.AF_INET
