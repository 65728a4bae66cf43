"""One HTTP request: every timeout explicit, disallowed addresses refused before any byte is sent.

`fetch` runs one request and never raises for a network problem: it returns the `Response` it
observed and a short error text that names the host but never the URL's credentials or query
string. Uptime checks, notification deliveries and metrics polls all go through it. A request
goes over a fresh connection (``Connection: close``) unless it asks to keep it alive for the
next request of its thread to the same origin (`pulse.net.keepalive`), as metrics polls do.

It is written on the standard library (`socket`, `ssl`, `http.client`) because a check is mostly
overhead: `requests` and urllib3 cost four times the CPU of the exchange itself, and Pulse runs
hundreds of checks a second. It sends what `requests` sent (the same URL normalisation, headers,
basic auth from the URL, redirect rules and cookies between hops).

The address guard is `pulse.net.dial`: it resolves the host, checks every resolved address against
the `AddressPolicy` and connects only to an allowed one, so the address checked is the address
connected to (DNS rebinding cannot slip past it) and a refused address sees no packet at all.
Every redirect hop connects through it again.

No proxy, ``.netrc`` or other setting from the environment is used: through a proxy the guard
could not see the address finally connected to.
"""

from __future__ import annotations

import dataclasses
import http.client
import io
import re
import socket
import ssl
import time
import urllib.request
import zlib
from collections.abc import Mapping
from datetime import datetime
from http.cookiejar import CookieJar
from typing import TYPE_CHECKING
from urllib.parse import urljoin

import pulse
from pulse.net import keepalive
from pulse.net.bodies import read_body
from pulse.net.dial import Dial, context, expiration_ms, not_after
from pulse.net.policy import AddressPolicy, AddressRefused
from pulse.net.response import Response
from pulse.net.urls import URL, FetchError, parse

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
MAX_REDIRECTS = 5
USER_AGENT = f"Pulse/{pulse.__version__} (uptime check)"

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclasses.dataclass(frozen=True)
class Request:
    """What one request sends.

    Parameters:
      method: GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS.
      url: an http:// or https:// URL; credentials in it are sent as basic auth.
      headers: sent as given; a User-Agent here replaces Pulse's.
      body: sent as given, a text UTF-8 encoded (set Content-Type in ``headers``).
      timeout_s: seconds; the connect timeout, the read timeout and the deadline of the whole
        request (every redirect hop and the body read included).
      forward_headers: send ``headers`` on a redirect to another origin too; by default they are
        dropped there (an API key meant for one host must not reach another), but for those that
        only describe the request (User-Agent, Accept, Content-Type...).
      keep_alive: keep the connection for this thread's next request to the same origin. Only for
        a request that is safe to send twice: if the server closes a kept connection just as the
        request goes out, it is sent once more on a fresh connection.
      verify: for https, True to verify the server's certificate against the system's CA
        certificates; the PEM text of CA certificates to verify it against instead (a private
        CA); False not to verify (then ``certificate_expiration_ms`` is None).
    """

    method: str
    url: str
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    body: str | bytes | None = None
    timeout_s: float = 10.0
    forward_headers: bool = False
    keep_alive: bool = False
    verify: bool | str = True


# --- the request -------------------------------------------------------------------------------

_HEADER_NAME = re.compile(r"[^:\s][^:\r\n]*")
_HEADER_VALUE = re.compile(r"(?:\S[^\r\n]*)?")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # in a header value: every control character but tab
_STRIPPED_ON_REDIRECT = frozenset({"cookie", "proxy-authorization"})
# Headers of a request's own that describe it rather than vouch for it: kept on a hop to another origin.
_PUBLIC = frozenset({"user-agent", "accept", "accept-encoding", "accept-language", "content-type"})
_CONTENT_HEADERS = frozenset({"content-length", "content-type", "transfer-encoding"})


def check_header(name: str, value: str) -> None:
    """`FetchError` for a header that cannot be sent: a name that is not a token, a value with a line
    break, or one that is not Latin-1 (HTTP/1.1 header bytes). The text never repeats the value."""
    if not (
        isinstance(name, str)
        and isinstance(value, str)
        and name.isascii()
        and _HEADER_NAME.fullmatch(name)
        and _HEADER_VALUE.fullmatch(value)
        and not _CONTROL.search(value)
    ):
        raise FetchError("invalid header")
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise FetchError("invalid header: its value is not Latin-1 text") from None


def _headers(
    given: Mapping[str, str], method: str, data: bytes | None, auth: str | None, keep_alive: bool = False
) -> list[tuple[str, str]]:
    """The request headers: Pulse's defaults, then ``given`` (replacing a default of any case),
    Content-Length and the URL's credentials; `FetchError` for a header that cannot be sent."""
    merged = {
        "user-agent": ("User-Agent", USER_AGENT),
        "accept-encoding": ("Accept-Encoding", "gzip, deflate"),
        "accept": ("Accept", "*/*"),
        "connection": ("Connection", "keep-alive" if keep_alive else "close"),
    }
    for name, value in given.items():
        check_header(name, value)
        merged[name.lower()] = (name, value)
    if data:
        merged["content-length"] = ("Content-Length", str(len(data)))
    elif method not in ("GET", "HEAD") and "content-length" not in merged:
        merged["content-length"] = ("Content-Length", "0")
    if auth is not None:
        merged["authorization"] = ("Authorization", auth)
    return list(merged.values())


def _request(method: str, url: URL, headers: list[tuple[str, str]], data: bytes | None) -> bytes:
    """The bytes of the request; `FetchError` for a header value that is not Latin-1."""
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
        raise FetchError("invalid header") from None
    return head + data if data else head


def _redirect(
    response: http.client.HTTPResponse,
    location: str,
    url: URL,
    method: str,
    headers: list[tuple[str, str]],
    data: bytes | None,
    jar: CookieJar | None,
    private: frozenset[str],
) -> tuple[URL, str, list[tuple[str, str]], bytes | None, CookieJar | None]:
    """The next hop after ``response``, by requests' rules: 302 and 303 turn any method but HEAD
    into GET, 301 turns POST into GET; all but 307 and 308 drop the body and its headers;
    Authorization, and the ``private`` headers (lower-case names), are dropped for another origin;
    the target's own Cookie header is replaced by the cookies the hops set."""
    try:
        location = location.encode("latin-1").decode("utf-8")  # http.client decoded it as Latin-1
    except UnicodeError:
        raise FetchError("invalid URL") from None
    if location.startswith("//"):
        location = f"{url.scheme}:{location}"
    try:
        new, _ = parse(urljoin(url.text, location))  # credentials in a Location are not used
    except ValueError:  # from urljoin
        raise FetchError("invalid URL") from None
    status = response.status
    if (status in (302, 303) and method != "HEAD") or (status == 301 and method == "POST"):
        method = "GET"
    drop = set(_STRIPPED_ON_REDIRECT)
    if status not in (307, 308):
        drop |= _CONTENT_HEADERS
        data = None
    upgrade = (url.scheme, url.port, new.scheme, new.port) == ("http", 80, "https", 443)
    if new.host != url.host or not (upgrade or (new.scheme, new.port) == (url.scheme, url.port)):
        drop |= {"authorization", *private}
    headers = [(name, value) for name, value in headers if name.lower() not in drop]
    if jar is None and response.getheader("Set-Cookie") is not None:
        jar = CookieJar()
    if jar is not None:
        jar.extract_cookies(response, urllib.request.Request(url.text))
        request = urllib.request.Request(new.text)
        jar.add_cookie_header(request)
        cookie = request.get_header("Cookie")
        if cookie:
            headers.append(("Cookie", cookie))
    return new, method, headers, data, jar


# --- connections -------------------------------------------------------------------------------


class _Exchange:
    """The state of one `fetch` (one thread uses it): its deadline, the hop's connection and what
    `Response` reports of it."""

    def __init__(self, timeout_s: float, host: str, keep_alive: bool = False) -> None:
        self.timeout_s = float(timeout_s)
        self.deadline = time.monotonic() + self.timeout_s
        self.host = host
        self.keep_alive = keep_alive
        self.key: keepalive.Key | None = None  # the hop's origin, to keep its connection under
        self.ip: str | None = None
        self.connected = False
        self.certificate_expiration_ms: float | None = None
        self.certificate_not_after: datetime | None = None
        self.sock: socket.socket | None = None
        self.response: http.client.HTTPResponse | None = None

    def left(self) -> float:
        """Seconds left before the deadline; `TimeoutError` when there are none."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("deadline reached")
        return remaining

    def send(
        self, url: URL, policy: AddressPolicy, verify: bool | str, method: str, raw: bytes
    ) -> http.client.HTTPResponse:
        """Send the ``raw`` request to ``url`` (closing the previous hop), read the response head:
        over a kept connection to its origin if there is one, else over a new one."""
        self.close()
        self.left()
        if self.keep_alive:
            self.key = (url.scheme, url.host, url.port, verify, policy)
            kept = keepalive.take(self.key)
            if kept is not None:
                self.sock, self.host, self.connected = kept.sock, url.host, True
                self.ip, self.certificate_expiration_ms = kept.ip, kept.certificate_expiration_ms
                self.certificate_not_after = kept.certificate_not_after
                try:
                    return self.exchange(method, raw)
                except (ConnectionError, ssl.SSLEOFError):  # closed by the server as it went out: a fresh one
                    self.close()
        self.open(url, policy, verify)
        return self.exchange(method, raw)

    def open(self, url: URL, policy: AddressPolicy, verify: bool | str) -> None:
        """Connect to ``url``, with TLS for https."""
        tls = context(verify, alpn="http/1.1") if url.scheme == "https" else None
        sock = self.sock = self.connect(url, policy)
        if tls is not None:
            host = url.host.rstrip(".")
            sock = self.sock = tls.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
            sock.settimeout(self.left())
            sock.do_handshake()
            self.certificate_expiration_ms = expiration_ms(sock)
            self.certificate_not_after = not_after(sock)
        self.connected = True

    def exchange(self, method: str, raw: bytes) -> http.client.HTTPResponse:
        """Send ``raw`` on the hop's connection and read the response head."""
        sock = self.sock
        assert sock is not None
        try:
            sock.settimeout(self.left())
            sock.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may have answered and closed early: read its answer
        receiver = _Receiver(sock, self)  # stands in for the socket: HTTPResponse only calls makefile()
        response = self.response = http.client.HTTPResponse(receiver, method=method)  # type: ignore[arg-type]
        response.begin()
        return response

    def connect(self, url: URL, policy: AddressPolicy) -> socket.socket:
        """Connect to the first allowed address of ``url.host`` (`pulse.net.dial`); raise
        `AddressRefused` if none is. Each attempt waits at most until the deadline."""
        self.host = url.host
        self.ip, self.connected, self.certificate_expiration_ms = None, False, None
        self.certificate_not_after = None
        dial = Dial(url.host, url.port)
        try:
            return dial.open(policy, self.left, self.timeout_s)
        finally:
            self.ip = dial.ip

    def finish(self, reusable: bool) -> None:
        """End the request: keep the connection for the next one if it asked to and it can be
        reused (the whole answer was read, and neither side said ``Connection: close``), else close it."""
        if reusable and self.keep_alive and self.key is not None and self.sock is not None:
            kept = keepalive.Kept(self.sock, self.ip, self.certificate_expiration_ms, self.certificate_not_after)
            keepalive.put(self.key, kept)
            self.sock, self.response = None, None
        self.close()

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
    request's deadline, so no trickle of bytes (head or body) outlasts the request."""

    def __init__(self, sock: socket.socket, exchange: _Exchange) -> None:
        super().__init__()
        self._sock = sock
        self._exchange = exchange

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(self)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        self._sock.settimeout(self._exchange.left())
        return self._sock.recv_into(buffer)


# --- fetch ---------------------------------------------------------------------------------------

# What a network problem, a bad answer or a bad redirect can raise.
_ERRORS = (FetchError, AddressRefused, OSError, ValueError, http.client.HTTPException, zlib.error)


def fetch(request: Request, policy: AddressPolicy) -> tuple[Response, str | None]:
    """Make one request; never raises for a network problem.

    Parameters:
      request: what to send; ``request.timeout_s`` bounds the whole call (DNS resolution aside,
        which the system resolver bounds).
      policy: the addresses it may connect to, checked on every connection (redirects included).

    Returns:
      The `Response` (``response_time_ms`` in milliseconds from just before the request, resolving
      and connecting included, to the end of the body read; ``body`` at most `MAX_BODY` bytes,
      decoded per Content-Encoding; ``status`` set once the final response's headers arrived) and
      an error text, None when the HTTP exchange completed, whatever its status code.
    """
    method = request.method.upper()
    if method not in METHODS:
        return Response(), f"unsupported method {request.method!r}"
    data = (request.body.encode() if isinstance(request.body, str) else request.body) or None
    try:
        url, auth = parse(request.url)
        headers = _headers(request.headers, method, data, auth, request.keep_alive)
        raw = _request(method, url, headers, data)
    except FetchError as e:
        return Response(), str(e)
    private = frozenset() if request.forward_headers else frozenset(h.lower() for h in request.headers) - _PUBLIC
    exchange = _Exchange(request.timeout_s, url.host, request.keep_alive)
    jar: CookieJar | None = None
    status: int | None = None
    answered: dict[str, str] = {}
    body = b""
    error: str | None = None
    reusable = False
    started = time.perf_counter()
    try:
        for hop in range(MAX_REDIRECTS + 1):
            response = exchange.send(url, policy, request.verify, method, raw)
            location = response.getheader("Location") if response.status in _REDIRECTS else None
            if not location:
                break
            if hop == MAX_REDIRECTS:
                raise FetchError(f"too many redirects (more than {MAX_REDIRECTS})")
            url, method, headers, data, jar = _redirect(response, location, url, method, headers, data, jar, private)
            raw = _request(method, url, headers, data)
        status = response.status
        answered = {name.lower(): value for name, value in response.getheaders()}
        if location is None:  # requests stops at an empty Location without reading the body
            body = read_body(response)
            reusable = not response.will_close and _read_to_the_end(response)
    except _ERRORS as e:
        error = describe(e, exchange.host, exchange.timeout_s)
    finally:
        elapsed_ms = (time.perf_counter() - started) * 1000
        exchange.finish(reusable)
    result = Response(
        status=status,
        headers=answered,
        body=body,
        response_time_ms=elapsed_ms,
        connected=exchange.connected,
        ip=exchange.ip,
        certificate_expiration_ms=exchange.certificate_expiration_ms,
        certificate_not_after=exchange.certificate_not_after,
    )
    return result, error


def _read_to_the_end(response: http.client.HTTPResponse) -> bool:
    """Whether the whole answer was read: the connection is ready for another request."""
    return response.isclosed() or (not response.chunked and response.length == 0)


def describe(error: Exception, host: str, timeout: float) -> str:
    """A short text for what went wrong with a connection to ``host`` (``timeout`` in seconds),
    naming the host but no credentials or query string."""
    if isinstance(error, (FetchError, AddressRefused)):
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
    if isinstance(error, ConnectionResetError):
        return f"connection reset by {host}"
    if isinstance(error, BrokenPipeError):
        return f"connection closed by {host} while sending"
    if isinstance(error, zlib.error):
        return f"cannot decode the body from {host}"
    if isinstance(error, http.client.HTTPException):
        return f"connection to {host} closed before a complete response"
    if isinstance(error, OSError):
        return f"cannot connect to {host}: {error.strerror or type(error).__name__}"
    return "invalid URL"  # a ValueError: a host name IDNA cannot encode (a label too long, empty)
