"""One HTTP check: every timeout explicit, unsafe targets refused before any byte is sent.

`fetch` runs one request with `requests` over a fresh connection and never raises for a network
problem: it returns the `Response` it observed and a short error text that names the host but never
the URL's credentials or query string.

The address guard lives in the connection itself (`_GuardedHTTPConnection._new_conn`): it resolves
the host, checks every resolved address against the `AddressPolicy` and connects only to an
allowed one, so the address checked is the address connected to (DNS rebinding cannot slip past
it) and a refused address sees no packet at all. Redirects go through the same connections.

Environment proxies and ``.netrc`` are ignored (``trust_env = False``): through a proxy the guard
could not see the address finally connected to.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
import ssl
import sys
import time
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.poolmanager import PoolManager
from urllib3.util.connection import allowed_gai_family

import pulse
from pulse.conditions import Response
from pulse.errors import PulseError

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
MAX_BODY = 1024 * 1024
"""Bytes of (decoded) body kept; the rest is not read."""
MAX_REDIRECTS = 5
USER_AGENT = f"Pulse/{pulse.__version__} (uptime check)"

_CHUNK = 64 * 1024

# Cloud metadata services: AWS (IPv4 and IPv6), GCP, Azure, DigitalOcean, OpenStack...
# (169.254.169.254), AWS ECS (169.254.170.2), Alibaba (100.100.100.200), Oracle (192.0.0.192),
# Azure WireServer (168.63.129.16, a public address).
_METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200", "192.0.0.192", "168.63.129.16")
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT (RFC 6598)


@dataclasses.dataclass(frozen=True)
class Target:
    """What one check requests.

    Parameters:
      method: GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS.
      url: an http:// or https:// URL; credentials in it are sent as basic auth.
      headers: sent as given; a User-Agent here replaces Pulse's.
      body: sent UTF-8 encoded (set Content-Type in ``headers``).
      timeout_s: seconds; the connect timeout, the read timeout and the deadline of the whole
        check (every redirect hop and the body read included).
    """

    method: str
    url: str
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    body: str | None = None
    timeout_s: float = 10.0


class TargetRefused(PulseError):  # noqa: N818 - the name callers use
    """The target's address is not allowed by the `AddressPolicy`. The text names host and class."""


@dataclasses.dataclass(frozen=True)
class AddressPolicy:
    """Which addresses a check may connect to; public addresses always may.

    Parameters:
      allow_private: loopback, RFC 1918, unique-local IPv6, CGNAT and other non-public addresses
        (on by default: self-hosted targets are common).
      allow_link_local: 169.254.0.0/16, fe80::/10 and the cloud metadata addresses.
    """

    allow_private: bool = True
    allow_link_local: bool = False

    def check(self, host: str, ip: str) -> None:
        """Raise `TargetRefused` if ``ip`` (an address ``host`` resolved to) is not allowed."""
        address = ipaddress.ip_address(ip.split("%", 1)[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        name = ip if host == ip else f"{host} ({ip})"
        if address in _METADATA or address.is_link_local:
            if self.allow_link_local:
                return
            raise TargetRefused(
                f"refused: {name} is a link-local/cloud-metadata address (allow it with PULSE_CHECK_ALLOW_LINK_LOCAL)"
            )
        if address.is_global or self.allow_private:
            return
        raise TargetRefused(f"refused: {name} is {_private_kind(address)} (allow it with PULSE_CHECK_ALLOW_PRIVATE)")


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


class _Check:
    """The state of one `fetch`, shared by its adapter and connections (one thread uses it)."""

    def __init__(self, timeout_s: float, policy: AddressPolicy, host: str) -> None:
        self.timeout_s = float(timeout_s)
        self.deadline = time.monotonic() + self.timeout_s
        self.policy = policy
        self.host = host
        self.ip: str | None = None
        self.connected = False
        self.certificate_expiration_ms: float | None = None

    def remaining(self) -> float:
        """Seconds left before the deadline, possibly negative."""
        return self.deadline - time.monotonic()

    def open(self, host: str, port: int, timeout: object, options: Any) -> socket.socket:
        """Connect to the first allowed address of ``host``; raise `TargetRefused` if none is.

        Each attempt waits at most ``timeout`` seconds (as capped by the adapter) and never past the
        deadline.
        """
        self.host, self.ip, self.connected, self.certificate_expiration_ms = host, None, False, None
        refused: TargetRefused | None = None
        error: OSError | None = None
        infos = socket.getaddrinfo(host.strip("[]"), port, allowed_gai_family(), socket.SOCK_STREAM)
        for family, kind, proto, _, address in infos:
            ip = str(address[0])
            try:
                self.policy.check(host, ip)
            except TargetRefused as e:
                self.ip, refused = ip, refused or e
                continue
            self.ip = ip
            sock = socket.socket(family, kind, proto)
            try:
                for option in options or ():
                    sock.setsockopt(*option)
                remaining = self.remaining()
                if remaining <= 0:
                    raise TimeoutError("deadline reached")
                sock.settimeout(min(timeout, remaining) if isinstance(timeout, int | float) else remaining)
                sock.connect(address)
            except OSError as e:
                sock.close()
                error = e
                continue
            self.ip = sock.getpeername()[0]
            return sock
        if error is not None:
            raise error
        if refused is not None:
            raise refused
        raise OSError(f"{host} resolves to no address")

    def opened(self, conn: HTTPConnection) -> None:
        """Record a connection that is ready for the request (TCP, and TLS for https)."""
        self.connected = True
        if isinstance(conn.sock, ssl.SSLSocket):
            not_after = (conn.sock.getpeercert() or {}).get("notAfter")
            if isinstance(not_after, str):
                self.certificate_expiration_ms = (ssl.cert_time_to_seconds(not_after) - time.time()) * 1000


class _GuardedHTTPConnection(HTTPConnection):
    """An urllib3 connection that connects only to addresses the check's policy allows."""

    def __init__(self, *args: Any, check: _Check, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._check = check

    def _new_conn(self) -> socket.socket:
        # Replaces urllib3's `create_connection` call, keeping its error types.
        try:
            sock = self._check.open(self._dns_host, self.port, self.timeout, self.socket_options)
        except UnicodeError as e:  # a label too long for IDNA
            raise urllib3.exceptions.LocationParseError(f"'{self.host}', label empty or too long") from e
        except socket.gaierror as e:
            raise urllib3.exceptions.NameResolutionError(self.host, self, e) from e
        except TimeoutError as e:
            raise urllib3.exceptions.ConnectTimeoutError(self, f"Connection to {self.host} timed out") from e
        except OSError as e:
            raise urllib3.exceptions.NewConnectionError(self, f"Failed to establish a new connection: {e}") from e
        sys.audit("http.client.connect", self, self.host, self.port)
        return sock

    def connect(self) -> None:
        super().connect()
        self._check.opened(self)


class _GuardedHTTPSConnection(_GuardedHTTPConnection, HTTPSConnection):
    """The same for https: `connect` resolves to `HTTPSConnection.connect`, which calls `_new_conn`."""


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _GuardedHTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPSConnection


class _GuardedPoolManager(PoolManager):
    def __init__(self, check: _Check, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._check = check
        self.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}

    def _new_pool(self, scheme: str, host: str, port: int, request_context: dict[str, Any] | None = None) -> Any:
        pool = super()._new_pool(scheme, host, port, request_context)
        pool.conn_kw["check"] = self._check
        return pool


class _GuardedAdapter(HTTPAdapter):
    """Guarded connections; each hop's timeouts capped at what is left of the check's deadline."""

    def __init__(self, check: _Check) -> None:
        self._check = check
        super().__init__(pool_connections=1, pool_maxsize=1, max_retries=0)

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any) -> None:
        self.poolmanager = _GuardedPoolManager(
            self._check, num_pools=connections, maxsize=maxsize, block=block, **pool_kwargs
        )

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        remaining = min(self._check.remaining(), self._check.timeout_s)
        if remaining <= 0:
            raise requests.ReadTimeout("deadline reached before the request", request=request)
        kwargs["timeout"] = (remaining, remaining)
        response = super().send(request, *args, **kwargs)
        if response.is_redirect:
            response.raw.close()  # a redirect's body is never read: requests would read all of it
        return response


# What a network problem can raise out of requests, urllib3 (reading the body) and the guard.
# (A ValueError comes from a Location header that is no URL.)
_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, TargetRefused, OSError, ValueError)


def fetch(target: Target, policy: AddressPolicy, *, verify: bool | str = True) -> tuple[Response, str | None]:
    """Run one check of ``target``; never raises for a network problem.

    Parameters:
      target: what to request; ``target.timeout_s`` bounds the whole call (DNS resolution aside,
        which the system resolver bounds).
      policy: the addresses it may connect to, checked on every connection (redirects included).
      verify: True to verify TLS against the default CA bundle; a CA bundle path for tests or
        private CAs; False not to verify (then ``certificate_expiration_ms`` is None).

    Returns:
      The `Response` (``response_time_ms`` in milliseconds from just before sending to the end of
      the body read; ``body`` at most `MAX_BODY` bytes, decoded per Content-Encoding; ``status``
      set once response headers arrived) and an error text, None when the HTTP exchange completed,
      whatever its status code.
    """
    method = target.method.upper()
    if method not in METHODS:
        return Response(), f"unsupported method {target.method!r}"
    try:
        url = urlsplit(target.url)
        host = url.hostname or ""
    except ValueError:
        return Response(), "invalid URL"
    if url.scheme.lower() not in ("http", "https"):
        return Response(), "invalid URL: only http:// and https:// are supported"
    check = _Check(target.timeout_s, policy, host)
    session = requests.Session()
    session.trust_env = False
    session.max_redirects = MAX_REDIRECTS
    session.headers["User-Agent"] = USER_AGENT
    adapter = _GuardedAdapter(check)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    status: int | None = None
    body = b""
    error: str | None = None
    started = time.perf_counter()
    try:
        response = session.request(
            method,
            target.url,
            headers=dict(target.headers),
            data=None if target.body is None else target.body.encode(),
            stream=True,
            timeout=(check.timeout_s, check.timeout_s),
            verify=verify,
        )
        status = response.status_code
        body = _read_body(response, check)
    except _ERRORS as e:
        error = _describe(e, check)
    finally:
        elapsed_ms = (time.perf_counter() - started) * 1000
        session.close()
    result = Response(
        status=status,
        body=body,
        response_time_ms=elapsed_ms,
        connected=check.connected,
        ip=check.ip,
        certificate_expiration_ms=check.certificate_expiration_ms,
    )
    return result, error


def _read_body(response: requests.Response, check: _Check) -> bytes:
    """Read up to `MAX_BODY` bytes, each read bounded by what is left of the deadline."""
    chunks: list[bytes] = []
    size = 0
    try:
        while size < MAX_BODY:
            remaining = check.remaining()
            if remaining <= 0:
                raise TimeoutError("deadline reached")
            sock = getattr(response.raw.connection, "sock", None)
            if sock is not None:
                sock.settimeout(min(remaining, check.timeout_s))
            chunk = response.raw.read1(min(_CHUNK, MAX_BODY - size), decode_content=True)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        response.close()
    return b"".join(chunks)


def _describe(error: Exception, check: _Check) -> str:
    """A short text for what went wrong, naming the host but no credentials or query string."""
    host, timeout = check.host, check.timeout_s
    causes = list(_causes(error))

    def find(*types: type[BaseException]) -> Any:
        return next((c for c in causes if isinstance(c, types)), None)

    if refused := find(TargetRefused):
        return str(refused)
    if find(urllib3.exceptions.NameResolutionError, socket.gaierror):
        return f"cannot resolve host {host}"
    if isinstance(error, requests.TooManyRedirects):
        return f"too many redirects (more than {MAX_REDIRECTS})"
    if isinstance(error, requests.ConnectTimeout):
        return f"timed out after {timeout} s connecting to {host}"
    if find(requests.Timeout, urllib3.exceptions.ReadTimeoutError, TimeoutError):
        return f"timed out after {timeout} s"
    if cert_error := find(ssl.SSLCertVerificationError):
        return f"TLS error with {host}: certificate verify failed ({cert_error.verify_message})"
    if tls_error := find(ssl.SSLError):
        reason = tls_error.reason.replace("_", " ").lower() if tls_error.reason else type(tls_error).__name__
        return f"TLS error with {host}: {reason}"
    if find(ConnectionRefusedError):
        return f"connection refused by {host}"
    if isinstance(error, requests.exceptions.InvalidSchema):
        return "invalid URL: only http:// and https:// are supported"
    if isinstance(error, (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema)):
        return "invalid URL"
    if isinstance(error, requests.exceptions.InvalidHeader):
        return "invalid header"
    if find(urllib3.exceptions.LocationParseError, UnicodeError) or isinstance(error, ValueError):
        return "invalid URL"
    if find(requests.exceptions.ContentDecodingError, urllib3.exceptions.DecodeError):
        return f"cannot decode the body from {host}"
    if find(urllib3.exceptions.ProtocolError, requests.exceptions.ChunkedEncodingError, ConnectionResetError):
        return f"connection to {host} closed before a complete response"
    if os_error := find(OSError):
        return f"cannot connect to {host}: {os_error.strerror or type(os_error).__name__}"
    return f"request to {host} failed ({type(error).__name__})"


def _causes(error: BaseException) -> Iterator[BaseException]:
    """``error`` and what it wraps: arguments, urllib3's ``reason``, causes and contexts."""
    seen: set[int] = set()
    todo = [error]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo.extend(a for a in current.args if isinstance(a, BaseException))
        for nested in (getattr(current, "reason", None), current.__cause__, current.__context__):
            if isinstance(nested, BaseException):
                todo.append(nested)
