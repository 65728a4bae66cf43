"""The ``tcp`` kind: connect to host:port (through `pulse.net.dial`, under the address policy like
any HTTP request), with TLS on connect if asked, optionally send a payload and read the reply.

    - key: db
      name: Database
      kind: tcp
      host: db.internal
      port: 5432
      send: "PING\\r\\n"               # optional: sent once connected
      tls: false                       # optional: TLS on connect, the certificate verified
      verify: true                     # optional, with tls: false accepts any certificate
      ca_file: /etc/pulse/acme-ca.pem  # optional, with tls: a CA of its own, or ca: its PEM (`pulse.uptime.kinds.ca`)
      conditions: ["[CONNECTED] == true", "[RESPONSE_TIME] < 300"]

A reply is read when there is a payload to send, or when a condition reads `[BODY]` (a server that
speaks first, as SMTP and SSH do): what the first read returns, at most `MAX_REPLY` bytes, waited
for until the timeout. `[RESPONSE_TIME]` runs from just before resolving the host to the end of
the reply (or of the connection, TLS handshake included, when none is read). Its fields are stored
in the component's ``target`` column.
"""

from __future__ import annotations

import dataclasses
import socket
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import Field, StringConstraints

from pulse.models import utcnow
from pulse.net import AddressPolicy, AddressRefused, Response
from pulse.net.dial import Dial, context, countdown, expiration_ms, not_after
from pulse.net.exchange import describe
from pulse.net.urls import FetchError
from pulse.uptime import conditions
from pulse.uptime.check import CheckResult, judge
from pulse.uptime.kinds import ca
from pulse.uptime.kinds.kind import CLEARED, Address, Kind, Stored, host

DEFAULT_CONDITIONS = ("[CONNECTED] == true",)
PLACEHOLDERS = frozenset({"[CONNECTED]", "[RESPONSE_TIME]", "[BODY]", "[IP]", "[CERTIFICATE_EXPIRATION]"})
MAX_REPLY = 64 * 1024  # bytes of a reply read
MAX_SEND = 65536  # characters of a payload


@dataclasses.dataclass(frozen=True)
class Target:
    """What one tcp check connects to and sends.

    Parameters:
      host: a host name or an IP address.
      port: 1 to 65535.
      send: sent (UTF-8) once connected; None sends nothing.
      tls: TLS on connect, the server's name checked against ``host``.
      verify: True to verify against the system's CA certificates (``SSL_CERT_FILE`` may name
        others), the PEM text of CA certificates to verify against instead, False not to verify.
      timeout_s: seconds; bounds the whole check (resolving aside, as for HTTP).
    """

    host: str
    port: int
    send: str | None = None
    tls: bool = False
    verify: bool | str = True
    timeout_s: float = 10.0


Payload = Annotated[str, StringConstraints(strip_whitespace=False)]  # "PING\r\n" is sent as written


class Fields(Address, ca.Fields):
    """A tcp check's fields in the configuration file."""

    send: Payload | None = Field(None, min_length=1, max_length=MAX_SEND)
    tls: bool = False
    verify: bool = True


def problems(spec: Fields) -> list[str]:
    found = []
    if spec.host is None or spec.port is None:
        found.append("a tcp check needs a host and a port")
    if "verify" in spec.model_fields_set and not spec.tls:
        found.append("verify goes with tls: true")
    named = ca.given(spec)
    if named and not spec.tls:
        found.append(f"{named} goes with tls: true")
    elif named and not spec.verify:
        found.append(f"{named} goes with verify: true (verify: false accepts any certificate)")
    return found + ca.problems(spec)


def stored(spec: Fields) -> dict[str, Any]:
    fields = {"host": spec.host, "port": spec.port, "send": spec.send, "tls": spec.tls, "verify": spec.verify}
    return CLEARED | {"target": fields | ({"ca": spec.trusted} if spec.trusted else {})}


def target(row: Stored) -> Target:
    fields = row.target or {}
    return Target(
        host=str(fields.get("host", "")),
        port=int(fields.get("port", 0)),
        send=fields.get("send"),
        tls=bool(fields.get("tls", False)),
        verify=fields.get("ca") or bool(fields.get("verify", True)),
        timeout_s=row.timeout_s,
    )


def command_line(address: str, options: Mapping[str, Any]) -> Target:
    """The target of ``pulse check --tcp HOST:PORT`` (``[v6 address]:PORT`` for IPv6)."""
    try:
        parts = urlsplit(f"//{address}")
        port = parts.port
        name = parts.hostname
    except ValueError:
        port, name = None, None
    if not name or port is None or port == 0:
        raise ValueError(f"--tcp {address!r}: expected HOST:PORT (or [IPv6]:PORT)")
    trusted = options.get("ca")
    if trusted and not options["tls"]:
        raise ValueError("--ca-file goes with --tls")
    return Target(host(name), port, options["send"], options["tls"], trusted or True, options["timeout_s"])


def run(check: Target, condition_texts: Sequence[str], extract: dict[str, str], policy: AddressPolicy) -> CheckResult:
    """Connect, send, read the reply, and evaluate the conditions (and extractions) on it."""
    texts = condition_texts or DEFAULT_CONDITIONS
    reads = check.send is not None or any("[BODY]" in conditions.parse(text).placeholders for text in texts)
    started_at = utcnow()
    response, error = exchange(check, policy, reads=reads)
    return judge(started_at, response, error, texts, extract)


# What a network problem or a refused address can raise.
_ERRORS = (FetchError, AddressRefused, OSError, ValueError)


def exchange(check: Target, policy: AddressPolicy, *, reads: bool) -> tuple[Response, str | None]:
    """Connect to the target (and send, and read a reply if ``reads``); never raises for a
    network problem. Returns the `Response` (``body`` the reply, ``status`` None) and an error
    text, None when every step completed."""
    left = countdown(check.timeout_s)
    dial = Dial(check.host, check.port)
    sock: socket.socket | None = None
    connected, expiration, reply, error = False, None, b"", None
    expires_at = None
    started = time.perf_counter()
    try:
        sock = dial.open(policy, left, check.timeout_s)
        if check.tls:
            name = check.host.rstrip(".")
            sock = context(check.verify).wrap_socket(sock, server_hostname=name, do_handshake_on_connect=False)
            sock.settimeout(left())
            sock.do_handshake()
            expiration, expires_at = expiration_ms(sock), not_after(sock)
        connected = True
        if check.send is not None:
            sock.settimeout(left())
            sock.sendall(check.send.encode())
        if reads:
            reply = _reply(sock, left, check)
    except _ERRORS as e:
        error = describe(e, check.host, check.timeout_s)
    finally:
        elapsed_ms = (time.perf_counter() - started) * 1000
        if sock is not None:
            sock.close()
    response = Response(
        body=reply, response_time_ms=elapsed_ms, connected=connected, ip=dial.ip, certificate_expiration_ms=expiration,
        certificate_not_after=expires_at,
    )  # fmt: skip
    return response, error


def _reply(sock: socket.socket, left: Callable[[], float], check: Target) -> bytes:
    """What the first read returns (empty when the server closed without a word)."""
    try:
        sock.settimeout(left())
        return sock.recv(MAX_REPLY)
    except TimeoutError:
        raise FetchError(f"timed out after {check.timeout_s} s waiting for a reply from {check.host}") from None
    except ssl.SSLZeroReturnError:
        return b""


KIND = Kind(
    name="tcp",
    fields=Fields,
    placeholders=PLACEHOLDERS,
    default_conditions=DEFAULT_CONDITIONS,
    problems=problems,
    stored=stored,
    target=target,
    run=run,
    flag="tcp",
    command_line=command_line,
)
