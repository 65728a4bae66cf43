"""One HTTP check: every timeout explicit, unsafe targets refused before any byte is sent.

`fetch` runs one request over a fresh connection and never raises for a network problem: it
returns the `Response` it observed and a short error text that names the host but never the URL's
credentials or query string.

It is written on the standard library (`socket`, `ssl`, `http.client`) because a check is mostly
overhead: `requests` and urllib3 cost four times the CPU of the exchange itself, and Pulse runs
hundreds of checks a second. It sends what `requests` sent (the same URL normalisation, headers,
basic auth from the URL, redirect rules and cookies between hops) but for ``Connection: close``.

The address guard lives in `_Check.connect`: it resolves the host, checks every resolved address
against the `AddressPolicy` and connects only to an allowed one, so the address checked is the
address connected to (DNS rebinding cannot slip past it) and a refused address sees no packet at
all. Every redirect hop connects through it again.

No proxy, ``.netrc`` or other setting from the environment is used: through a proxy the guard
could not see the address finally connected to.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import http.client
import io
import ipaddress
import os
import re
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Mapping
from http.cookiejar import CookieJar
from typing import TYPE_CHECKING
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import Request

import pulse
from pulse.conditions import Response
from pulse.errors import PulseError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

    from pulse.config import Settings

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
MAX_BODY = 1024 * 1024
"""Bytes of (decoded) body kept; the rest is not read."""
MAX_REDIRECTS = 5
USER_AGENT = f"Pulse/{pulse.__version__} (uptime check)"

_CHUNK = 64 * 1024
_DEFAULT_PORTS = {"http": 80, "https": 443}
_REDIRECTS = frozenset({301, 302, 303, 307, 308})

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
      body: sent as given, a text UTF-8 encoded (set Content-Type in ``headers``).
      timeout_s: seconds; the connect timeout, the read timeout and the deadline of the whole
        check (every redirect hop and the body read included).
    """

    method: str
    url: str
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    body: str | bytes | None = None
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

    @classmethod
    def from_settings(cls, settings: Settings) -> AddressPolicy:
        return cls(allow_private=settings.check_allow_private, allow_link_local=settings.check_allow_link_local)

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


class _FetchError(Exception):
    """A check failed; the text is the error `fetch` returns (it never leaves `fetch`)."""


# --- URLs --------------------------------------------------------------------------------------

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PATH_CHARS = _UNRESERVED | frozenset("!$&'()*+,;=:@/")
_QUERY_CHARS = _PATH_CHARS | {"?"}
_PLAIN_PATH = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]*")
_PLAIN_QUERY = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_BAD_HOST_CHAR = re.compile(r"[\x00-\x20\x7f%\\\[\]]")
_BRACKETED_HOST = re.compile(r"\[[^\[\]]*:[^\[\]]*\](?::[0-9]*)?")


@dataclasses.dataclass(frozen=True)
class _URL:
    """One hop's URL as it is requested.

    Parameters:
      scheme: http or https.
      host: lower case, ASCII (IDNA), no brackets; a trailing dot kept (it matters to DNS only).
      port: the port connected to.
      target: the request target: path and query, normalised and percent-encoded as requests
        does it (dot segments removed, invalid characters encoded, unreserved ones decoded).
    """

    scheme: str
    host: str
    port: int
    target: str

    @property
    def authority(self) -> str:
        """The Host header: no trailing dot or IPv6 zone, the port unless it is the default."""
        host = self.host.rstrip(".")
        if ":" in host:
            host = f"[{host.split('%', 1)[0]}]"
        return host if self.port == _DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def text(self) -> str:
        """The URL without credentials or fragment: what relative redirects and cookies go by."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if self.port == _DEFAULT_PORTS[self.scheme] else f":{self.port}"
        return f"{self.scheme}://{host}{port}{self.target}"


def _parse(text: str) -> tuple[_URL, str | None]:
    """The URL to request and the basic-auth credentials in it; `_FetchError` if it is no valid URL."""
    try:
        parts = urlsplit(text.lstrip())
        port = parts.port
        host = parts.hostname or ""
    except ValueError:
        raise _FetchError("invalid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise _FetchError("invalid URL: only http:// and https:// are supported")
    host_port = parts.netloc.rpartition("@")[2]
    if host_port.startswith("["):  # an IPv6 address (urlsplit checked it, not what follows it)
        if not _BRACKETED_HOST.fullmatch(host_port):
            raise _FetchError("invalid URL")
    elif not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise _FetchError("invalid URL") from None
    if not host or host.startswith(("*", ".")) or (":" not in host and _BAD_HOST_CHAR.search(host)):
        raise _FetchError("invalid URL")
    url = _URL(scheme, host, port if port is not None else _DEFAULT_PORTS[scheme], _target(parts.path, parts.query))
    return url, _basic_auth(parts.username, parts.password)


def _target(path: str, query: str) -> str:
    """The request target for ``path`` and ``query``, normalised as requests and urllib3 do."""
    if not (_PLAIN_PATH.fullmatch(path) and _PLAIN_QUERY.fullmatch(query) and "/." not in path):
        path = _encode(_remove_dot_segments(path), _PATH_CHARS)
        query = _encode(query, _QUERY_CHARS)
        path, query = _unquote_unreserved(path), _unquote_unreserved(query)
    return f"{path or '/'}?{query}" if query else path or "/"


def _remove_dot_segments(path: str) -> str:
    """``path`` without its ``.`` and ``..`` segments (RFC 3986 5.2.4)."""
    output: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if path.startswith("/") and (not output or output[0]):
        output.insert(0, "")
    if path.endswith(("/.", "/..")):
        output.append("")
    return "/".join(output)


def _encode(component: str, allowed: frozenset[str]) -> str:
    """Percent-encode what ``allowed`` lacks: escapes upper-cased, a ``%`` kept only when every
    ``%`` starts an escape."""
    component, escapes = _ESCAPE.subn(lambda m: m.group(0).upper(), component)
    raw = component.encode("utf-8", "surrogatepass")
    keep_percent = escapes == raw.count(b"%")
    return "".join(
        chr(byte) if chr(byte) in allowed or (keep_percent and byte == 0x25) else f"%{byte:02X}" for byte in raw
    )


def _unquote_unreserved(text: str) -> str:
    """Decode the escapes of unreserved characters (``%7E`` is ``~``); keep the others."""
    return _ESCAPE.sub(lambda m: c if (c := chr(int(m.group(0)[1:], 16))) in _UNRESERVED else m.group(0), text)


def _basic_auth(username: str | None, password: str | None) -> str | None:
    """The Authorization header for credentials in a URL (requests' rules: both parts present,
    one non-empty, percent-decoded, Latin-1)."""
    if username is None or password is None or not (username or password):
        return None
    try:
        credentials = f"{unquote(username)}:{unquote(password)}".encode("latin-1")
    except UnicodeEncodeError:
        raise _FetchError("invalid URL") from None
    return "Basic " + base64.b64encode(credentials).decode("ascii")


# --- the request -------------------------------------------------------------------------------

_HEADER_NAME = re.compile(r"[^:\s][^:\r\n]*")
_HEADER_VALUE = re.compile(r"(?:\S[^\r\n]*)?")
_STRIPPED_ON_REDIRECT = frozenset({"cookie", "proxy-authorization"})
_CONTENT_HEADERS = frozenset({"content-length", "content-type", "transfer-encoding"})


def _headers(given: Mapping[str, str], method: str, data: bytes | None, auth: str | None) -> list[tuple[str, str]]:
    """The request headers: Pulse's defaults, then ``given`` (replacing a default of any case),
    Content-Length and the URL's credentials; `_FetchError` for a header that cannot be sent."""
    merged = {
        "user-agent": ("User-Agent", USER_AGENT),
        "accept-encoding": ("Accept-Encoding", "gzip, deflate"),
        "accept": ("Accept", "*/*"),
        "connection": ("Connection", "close"),
    }
    for name, value in given.items():
        if not (
            isinstance(name, str)
            and isinstance(value, str)
            and name.isascii()
            and _HEADER_NAME.fullmatch(name)
            and _HEADER_VALUE.fullmatch(value)
        ):
            raise _FetchError("invalid header")
        merged[name.lower()] = (name, value)
    if data:
        merged["content-length"] = ("Content-Length", str(len(data)))
    elif method not in ("GET", "HEAD") and "content-length" not in merged:
        merged["content-length"] = ("Content-Length", "0")
    if auth is not None:
        merged["authorization"] = ("Authorization", auth)
    return list(merged.values())


def _request(method: str, url: _URL, headers: list[tuple[str, str]], data: bytes | None) -> bytes:
    """The bytes of the request; `_FetchError` for a header value that is not Latin-1."""
    names = {name.lower() for name, _ in headers}
    lines = [f"{method} {url.target} HTTP/1.1"]
    if "host" not in names:
        lines.append(f"Host: {url.authority}")
    lines.extend(f"{name}: {value}" for name, value in headers)
    if data is None and method in ("POST", "PUT", "PATCH") and not names & {"content-length", "transfer-encoding"}:
        lines.append("Content-Length: 0")  # as http.client adds it (after a redirect purged it)
    lines.append("\r\n")
    try:
        head = "\r\n".join(lines).encode("latin-1")
    except UnicodeEncodeError:
        raise _FetchError("invalid header") from None
    return head + data if data else head


def _redirect(
    response: http.client.HTTPResponse,
    location: str,
    url: _URL,
    method: str,
    headers: list[tuple[str, str]],
    data: bytes | None,
    jar: CookieJar | None,
) -> tuple[_URL, str, list[tuple[str, str]], bytes | None, CookieJar | None]:
    """The next hop after ``response``, by requests' rules: 302 and 303 turn any method but HEAD
    into GET, 301 turns POST into GET; all but 307 and 308 drop the body and its headers;
    Authorization is dropped for another origin; the target's own Cookie header is replaced by the
    cookies the hops set."""
    try:
        location = location.encode("latin-1").decode("utf-8")  # http.client decoded it as Latin-1
    except UnicodeError:
        raise _FetchError("invalid URL") from None
    if location.startswith("//"):
        location = f"{url.scheme}:{location}"
    try:
        new, _ = _parse(urljoin(url.text, location))  # credentials in a Location are not used
    except ValueError:  # from urljoin
        raise _FetchError("invalid URL") from None
    status = response.status
    if (status in (302, 303) and method != "HEAD") or (status == 301 and method == "POST"):
        method = "GET"
    drop = set(_STRIPPED_ON_REDIRECT)
    if status not in (307, 308):
        drop |= _CONTENT_HEADERS
        data = None
    upgrade = (url.scheme, url.port, new.scheme, new.port) == ("http", 80, "https", 443)
    if new.host != url.host or not (upgrade or (new.scheme, new.port) == (url.scheme, url.port)):
        drop.add("authorization")
    headers = [(name, value) for name, value in headers if name.lower() not in drop]
    if jar is None and response.getheader("Set-Cookie") is not None:
        jar = CookieJar()
    if jar is not None:
        jar.extract_cookies(response, Request(url.text))
        request = Request(new.text)
        jar.add_cookie_header(request)
        cookie = request.get_header("Cookie")
        if cookie:
            headers.append(("Cookie", cookie))
    return new, method, headers, data, jar


# --- connections -------------------------------------------------------------------------------

_contexts: dict[bool | str, ssl.SSLContext] = {}
_contexts_lock = threading.Lock()


def _context(verify: bool | str) -> ssl.SSLContext:
    """The TLS context for ``verify``, made once per process (making one costs milliseconds)."""
    key = verify or False
    context = _contexts.get(key)
    if context is None:
        with _contexts_lock:
            context = _contexts.get(key)
            if context is None:
                context = _contexts[key] = _new_context(key)
    return context


def _new_context(verify: bool | str) -> ssl.SSLContext:
    if verify is True:
        context = ssl.create_default_context()
    elif verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif os.path.isdir(verify):
        context = ssl.create_default_context(capath=verify)
    else:
        context = ssl.create_default_context(cafile=verify)
    context.set_alpn_protocols(["http/1.1"])
    return context


@functools.cache
def _family() -> socket.AddressFamily:
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


class _Check:
    """The state of one `fetch` (one thread uses it): its deadline, the hop's connection and what
    `Response` reports of it."""

    def __init__(self, timeout_s: float, host: str) -> None:
        self.timeout_s = float(timeout_s)
        self.deadline = time.monotonic() + self.timeout_s
        self.host = host
        self.ip: str | None = None
        self.connected = False
        self.certificate_expiration_ms: float | None = None
        self.sock: socket.socket | None = None
        self.response: http.client.HTTPResponse | None = None

    def left(self) -> float:
        """Seconds left before the deadline; `TimeoutError` when there are none."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("deadline reached")
        return remaining

    def exchange(
        self, url: _URL, policy: AddressPolicy, verify: bool | str, method: str, request: bytes
    ) -> http.client.HTTPResponse:
        """Connect to ``url`` (closing the previous hop), send ``request``, read the response head."""
        self.close()
        self.left()
        context = _context(verify) if url.scheme == "https" else None
        sock = self.sock = self.connect(url, policy)
        if context is not None:
            sock = self.sock = context.wrap_socket(
                sock, server_hostname=url.host.rstrip("."), do_handshake_on_connect=False
            )
            sock.settimeout(self.left())
            sock.do_handshake()
            not_after = (sock.getpeercert() or {}).get("notAfter")
            if isinstance(not_after, str):
                self.certificate_expiration_ms = (ssl.cert_time_to_seconds(not_after) - time.time()) * 1000
        self.connected = True
        try:
            sock.settimeout(self.left())
            sock.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may have answered and closed early: read its answer
        receiver = _Receiver(sock, self)  # stands in for the socket: HTTPResponse only calls makefile()
        response = self.response = http.client.HTTPResponse(receiver, method=method)  # type: ignore[arg-type]
        response.begin()
        return response

    def connect(self, url: _URL, policy: AddressPolicy) -> socket.socket:
        """Connect to the first allowed address of ``url.host``; raise `TargetRefused` if none is.

        Each attempt waits at most until the deadline.
        """
        host = self.host = url.host
        self.ip, self.connected, self.certificate_expiration_ms = None, False, None
        refused: TargetRefused | None = None
        error: OSError | None = None
        for family, kind, proto, _, address in socket.getaddrinfo(host, url.port, _family(), socket.SOCK_STREAM):
            ip = str(address[0])
            try:
                policy.check(host, ip)
            except TargetRefused as e:
                self.ip, refused = ip, refused or e
                continue
            self.ip = ip
            sock = socket.socket(family, kind, proto)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(self.left())
                sock.connect(address)
            except OSError as e:
                sock.close()
                error = e
                continue
            self.ip = sock.getpeername()[0]
            return sock
        if isinstance(error, TimeoutError):
            raise _FetchError(f"timed out after {self.timeout_s} s connecting to {host}")
        if error is not None:
            raise error
        if refused is not None:
            raise refused
        raise OSError(f"{host} resolves to no address")

    def close(self) -> None:
        """Close the hop's response and connection (its body unread, if so)."""
        if self.response is not None:
            self.response.close()
            self.response = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class _Receiver(io.RawIOBase):
    """The socket as `http.client.HTTPResponse` reads it: every receive waits at most until the
    check's deadline, so no trickle of bytes (head or body) outlasts the check."""

    def __init__(self, sock: socket.socket, check: _Check) -> None:
        super().__init__()
        self._sock = sock
        self._check = check

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(self)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        self._sock.settimeout(self._check.left())
        return self._sock.recv_into(buffer)


# --- bodies ------------------------------------------------------------------------------------


class _Decoder:
    """Decodes a gzip or deflate body as it arrives, as urllib3 did: gzip members in a row (junk
    after a complete member ignored), deflate with or without its zlib wrapper. A truncated body
    decodes to what arrived; anything else undecodable raises `zlib.error`."""

    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._obj = zlib.decompressobj(16 + zlib.MAX_WBITS if gzip else zlib.MAX_WBITS)
        self._members = 0
        self._done = False
        self._head = b""  # deflate: what came before the format was known
        self._known = gzip

    def __call__(self, data: bytes, limit: int) -> bytes:
        """Up to ``limit`` bytes decoded from ``data``."""
        if not self._gzip:
            return self._deflate(data, limit)
        out = b""
        while data and not self._done and len(out) < limit:
            try:
                out += self._obj.decompress(data, limit - len(out))
            except zlib.error:
                if not self._members:
                    raise
                self._done = True
                break
            if not self._obj.eof:
                break
            data = self._obj.unused_data
            self._obj = zlib.decompressobj(16 + zlib.MAX_WBITS)
            self._members += 1
        return out

    def _deflate(self, data: bytes, limit: int) -> bytes:
        if self._known:
            return self._obj.decompress(data, limit)
        self._head += data
        try:
            out = self._obj.decompress(data, limit)
        except zlib.error:  # no zlib wrapper: raw deflate
            self._known = True
            self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._obj.decompress(self._head, limit)
        if out:
            self._known, self._head = True, b""
        return out


def _decoder(content_encoding: str | None) -> _Decoder | None:
    """The decoder for a Content-Encoding: gzip or deflate; None for none or an unknown one."""
    codings = [c for c in (part.strip().lower() for part in (content_encoding or "").split(",")) if c != "identity"]
    codings = [c for c in codings if c]
    if not codings:
        return None
    if len(codings) > 1:
        raise zlib.error(f"more than one content coding: {content_encoding}")
    if codings[0] in ("gzip", "x-gzip", "deflate"):
        return _Decoder(gzip=codings[0] != "deflate")
    return None


def _read_body(response: http.client.HTTPResponse) -> bytes:
    """Read up to `MAX_BODY` decoded bytes; every read is bounded by the check's deadline."""
    decode = _decoder(response.getheader("Content-Encoding"))
    chunks: list[bytes] = []
    size = 0
    while size < MAX_BODY:
        chunk = response.read1(_CHUNK if decode else min(_CHUNK, MAX_BODY - size))
        if not chunk:
            if response.length:  # the connection closed before Content-Length bytes came
                raise http.client.IncompleteRead(b"", response.length)
            break
        if decode is not None:
            chunk = decode(chunk, MAX_BODY - size)
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


# --- the check ---------------------------------------------------------------------------------

# What a network problem, a bad answer or a bad redirect can raise.
_ERRORS = (_FetchError, TargetRefused, OSError, ValueError, http.client.HTTPException, zlib.error)


def fetch(target: Target, policy: AddressPolicy, *, verify: bool | str = True) -> tuple[Response, str | None]:
    """Run one check of ``target``; never raises for a network problem.

    Parameters:
      target: what to request; ``target.timeout_s`` bounds the whole call (DNS resolution aside,
        which the system resolver bounds).
      policy: the addresses it may connect to, checked on every connection (redirects included).
      verify: True to verify TLS against the system's CA certificates; a CA bundle path (or
        directory) for tests or private CAs; False not to verify (then
        ``certificate_expiration_ms`` is None).

    Returns:
      The `Response` (``response_time_ms`` in milliseconds from just before the request, resolving
      and connecting included, to the end of the body read; ``body`` at most `MAX_BODY` bytes,
      decoded per Content-Encoding; ``status`` set once the final response's headers arrived) and
      an error text, None when the HTTP exchange completed, whatever its status code.
    """
    method = target.method.upper()
    if method not in METHODS:
        return Response(), f"unsupported method {target.method!r}"
    data = (target.body.encode() if isinstance(target.body, str) else target.body) or None
    try:
        url, auth = _parse(target.url)
        headers = _headers(target.headers, method, data, auth)
        request = _request(method, url, headers, data)
    except _FetchError as e:
        return Response(), str(e)
    check = _Check(target.timeout_s, url.host)
    jar: CookieJar | None = None
    status: int | None = None
    answered: dict[str, str] = {}
    body = b""
    error: str | None = None
    started = time.perf_counter()
    try:
        for hop in range(MAX_REDIRECTS + 1):
            response = check.exchange(url, policy, verify, method, request)
            location = response.getheader("Location") if response.status in _REDIRECTS else None
            if not location:
                break
            if hop == MAX_REDIRECTS:
                raise _FetchError(f"too many redirects (more than {MAX_REDIRECTS})")
            url, method, headers, data, jar = _redirect(response, location, url, method, headers, data, jar)
            request = _request(method, url, headers, data)
        status = response.status
        answered = {name.lower(): value for name, value in response.getheaders()}
        if location is None:  # requests stops at an empty Location without reading the body
            body = _read_body(response)
    except _ERRORS as e:
        error = _describe(e, check)
    finally:
        elapsed_ms = (time.perf_counter() - started) * 1000
        check.close()
    result = Response(
        status=status,
        headers=answered,
        body=body,
        response_time_ms=elapsed_ms,
        connected=check.connected,
        ip=check.ip,
        certificate_expiration_ms=check.certificate_expiration_ms,
    )
    return result, error


def _describe(error: Exception, check: _Check) -> str:
    """A short text for what went wrong, naming the host but no credentials or query string."""
    host, timeout = check.host, check.timeout_s
    if isinstance(error, (_FetchError, TargetRefused)):
        return str(error)
    if isinstance(error, socket.gaierror):
        return f"cannot resolve host {host}"
    if isinstance(error, TimeoutError):
        return f"timed out after {timeout} s"
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"TLS error with {host}: certificate verify failed ({error.verify_message})"
    if isinstance(error, ssl.SSLError):
        reason = error.reason.replace("_", " ").lower() if error.reason else type(error).__name__
        return f"TLS error with {host}: {reason}"
    if isinstance(error, ConnectionRefusedError):
        return f"connection refused by {host}"
    if isinstance(error, zlib.error):
        return f"cannot decode the body from {host}"
    if isinstance(error, (http.client.HTTPException, ConnectionResetError)):
        return f"connection to {host} closed before a complete response"
    if isinstance(error, OSError):
        return f"cannot connect to {host}: {error.strerror or type(error).__name__}"
    return "invalid URL"  # a ValueError: a host name IDNA cannot encode (a label too long, empty)
