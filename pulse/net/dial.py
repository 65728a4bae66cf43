"""Connecting under the `AddressPolicy`: the one place a TCP connection out of Pulse is made, for
HTTP (`pulse.net.exchange`) and for every other check kind (`pulse.uptime.kinds`) alike.

`Dial.open` resolves the host, checks every resolved address against the policy and connects
only to an allowed one, so the address checked is the address connected to (DNS rebinding cannot
slip past it) and a refused address sees no packet at all. `context` gives the TLS context for a
verification choice (the system's CA certificates, a CA's own, or none), made once per process.
"""

from __future__ import annotations

import dataclasses
import functools
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


#: The TLS contexts made, by (verify, alpn). Those of a CA's PEM text are at most `MAX_CA_CONTEXTS`:
#: when one more is needed, the one made first of them goes.
_contexts: dict[tuple[bool | str, str | None], ssl.SSLContext] = {}
_contexts_lock = threading.Lock()
MAX_CA_CONTEXTS = 256  # about 20 KiB each


def context(verify: bool | str, *, alpn: str | None = None) -> ssl.SSLContext:
    """The TLS context for ``verify`` offering the ALPN protocol ``alpn``, made once per process
    (making one costs milliseconds: 48 ms for the system's CA certificates, 1 ms for one CA's).

    Parameters:
      verify: True to verify the peer against the system's CA certificates (which
        ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` may replace); the PEM text of CA certificates to
        verify it against instead of the system's (Python's `ssl` ``cadata``; the host name is
        checked all the same); False not to verify.
    """
    key = (verify, alpn)
    found = _contexts.get(key)
    if found is None:
        with _contexts_lock:
            found = _contexts.get(key)
            if found is None:
                found = _new_context(verify, alpn)
                if isinstance(verify, str):
                    _make_room()
                _contexts[key] = found
    return found


def _make_room() -> None:
    """Drop the first made of the CAs' contexts when there are `MAX_CA_CONTEXTS` of them."""
    made = [key for key in _contexts if isinstance(key[0], str)]
    if len(made) >= MAX_CA_CONTEXTS:
        del _contexts[made[0]]


def _new_context(verify: bool | str, alpn: str | None) -> ssl.SSLContext:
    if verify is True:
        made = ssl.create_default_context()
    elif verify is False:
        made = ssl.create_default_context()
        made.check_hostname = False
        made.verify_mode = ssl.CERT_NONE
    else:
        made = ssl.create_default_context(cadata=verify)
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
