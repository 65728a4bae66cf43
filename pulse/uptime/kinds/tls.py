"""The ``tls`` kind: the certificate a server presents, after STARTTLS where asked, judged on its
expiry and on whether its chain and name verify.

    - key: mail-cert
      name: Mail certificate
      kind: tls
      host: mail.acme.example
      port: 587                        # optional: 443, or the starttls protocol's port (25, 143, 5432)
      starttls: smtp                   # optional: smtp, imap or postgres (`pulse.net.starttls`)
      ca_file: /etc/pulse/acme-ca.pem  # optional: a CA of its own, or ca: its PEM (`pulse.uptime.kinds.ca`)
      conditions: ["[CERTIFICATE_VALID] == true", "[CERTIFICATE_EXPIRATION] > 14d"]

The certificate is reported even when it does not verify, so that the operator sees why: the
check first makes a verified handshake (its own CA or the system's, which ``SSL_CERT_FILE`` and
``SSL_CERT_DIR`` may replace, and the name checked against ``host``); when that fails on the
certificate (`ssl.SSLCertVerificationError`), it keeps OpenSSL's reason (``certificate has
expired``, ``self-signed certificate``, ``Hostname mismatch…``) and connects once more without
verification to read the certificate. A valid certificate costs one handshake, an invalid one two;
Python's `ssl` offers no way to read an unverified peer's chain before 3.13, nor OpenSSL's verify
result after a handshake that did not verify, so no cheaper way is correct on 3.11.

The certificate (``getpeercert(binary_form=True)``, the form that stays available when it was not
verified) is parsed with ``cryptography``: `[CERTIFICATE_EXPIRATION]` is the time until its
notAfter (negative once expired); `[CERTIFICATE_VALID]` is true when the chain and the name
verified, and shown with the reason when not (``[CERTIFICATE_VALID] (false: certificate has
expired) == true``); `[BODY]` is a JSON description of it (`describe`), for conditions such as
``[BODY].issuer == pat(*Let's Encrypt*)``. `[CONNECTED]` is true once a handshake completed and
`[RESPONSE_TIME]` runs from just before resolving the host to the end of the last handshake. Every
connection goes through `pulse.net.dial` (the address policy), and the whole check, both
connections and the STARTTLS exchanges included, is bounded by the timeout. Its fields are stored
in the component's ``target`` column.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import socket
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from cryptography import x509

from pulse.models import utcnow
from pulse.net import AddressPolicy, AddressRefused, Response
from pulse.net.dial import Dial, context, countdown
from pulse.net.exchange import describe
from pulse.net.starttls import PROTOCOLS, negotiate
from pulse.net.urls import FetchError
from pulse.uptime.check import CheckResult, judge
from pulse.uptime.kinds import ca
from pulse.uptime.kinds.kind import CLEARED, Address, Kind, Stored, host

DEFAULT_CONDITIONS = ("[CERTIFICATE_VALID] == true", "[CERTIFICATE_EXPIRATION] > 14d")
PLACEHOLDERS = frozenset(
    {"[CERTIFICATE_VALID]", "[CERTIFICATE_EXPIRATION]", "[CONNECTED]", "[RESPONSE_TIME]", "[BODY]", "[IP]"}
)
#: The port a tls check connects to when the file gives none, by its starttls protocol (None: TLS
#: on connect, HTTPS's port). IANA's ports: smtp 25 (submission is 587: give it), imap 143.
DEFAULT_PORTS: dict[str | None, int] = {None: 443, "smtp": 25, "imap": 143, "postgres": 5432}


@dataclasses.dataclass(frozen=True)
class Target:
    """What one tls check connects to.

    Parameters:
      host: a host name or an IP address; the certificate's name is checked against it.
      port: 1 to 65535.
      starttls: one of `pulse.net.starttls.PROTOCOLS`, or None for TLS on connect.
      timeout_s: seconds; bounds the whole check (resolving aside, as for HTTP).
      ca: the PEM text of CA certificates to verify against instead of the system's.
    """

    host: str
    port: int = 443
    starttls: str | None = None
    timeout_s: float = 10.0
    ca: str | None = None


class Fields(Address, ca.Fields):
    """A tls check's fields in the configuration file, beside ``host``, ``port``, ``ca`` and ``ca_file``."""

    starttls: Literal["smtp", "imap", "postgres"] | None = None


def problems(spec: Fields) -> list[str]:
    found = [] if spec.host is not None else ["a tls check needs a host (and a port, 443 by default)"]
    return found + ca.problems(spec)


def stored(spec: Fields) -> dict[str, Any]:
    port = spec.port or DEFAULT_PORTS[spec.starttls]
    fields = {"host": spec.host, "port": port, "starttls": spec.starttls}
    return CLEARED | {"target": fields | ({"ca": spec.trusted} if spec.trusted else {})}


def target(row: Stored) -> Target:
    fields = row.target or {}
    starttls = fields.get("starttls")
    return Target(
        host=str(fields.get("host", "")),
        port=int(fields.get("port") or DEFAULT_PORTS.get(starttls, 443)),
        starttls=starttls,
        timeout_s=row.timeout_s,
        ca=fields.get("ca"),
    )


def command_line(address: str, options: Mapping[str, Any]) -> Target:
    """The target of ``pulse check --cert HOST[:PORT] [--starttls PROTOCOL]`` (``[v6 address]``)."""
    starttls = options.get("starttls")
    if starttls is not None and starttls not in PROTOCOLS:
        raise ValueError(f"--starttls {starttls!r}: use {', '.join(PROTOCOLS)}")
    try:
        parts = urlsplit(f"//{address}")
        port, name = parts.port, parts.hostname
    except ValueError:
        port, name = 0, None
    if not name or port == 0:
        raise ValueError(f"--cert {address!r}: expected HOST or HOST:PORT (or [IPv6]:PORT)")
    return Target(host(name), port or DEFAULT_PORTS[starttls], starttls, options["timeout_s"], options.get("ca"))


def run(check: Target, condition_texts: Sequence[str], extract: dict[str, str], policy: AddressPolicy) -> CheckResult:
    """Read the certificate, verify it, and evaluate the conditions (and extractions) on it."""
    started_at = utcnow()
    response, error = exchange(check, policy)
    return judge(started_at, response, error, condition_texts or DEFAULT_CONDITIONS, extract)


# What a network problem or a refused address can raise.
_ERRORS = (FetchError, AddressRefused, OSError)


def exchange(check: Target, policy: AddressPolicy) -> tuple[Response, str | None]:
    """Read and verify the target's certificate; never raises for a network problem. Returns the
    `Response` (``body`` the certificate described, ``certificate_valid`` and
    ``certificate_problem`` set once a certificate was read) and an error text, None when a
    certificate was read."""
    left = countdown(check.timeout_s)
    dial = Dial(check.host, check.port)
    problem, error = None, None
    started = time.perf_counter()
    try:
        try:
            der = _certificate(check, policy, dial, left, verify=True)
        except ssl.SSLCertVerificationError as e:
            problem = str(e.verify_message or e.reason or "certificate verify failed").rstrip(".")
            der = _certificate(check, policy, dial, left, verify=False)
        body, not_after = describe_certificate(der, check.host)
    except _ERRORS as e:
        error = describe(e, check.host, check.timeout_s)
    elapsed_ms = (time.perf_counter() - started) * 1000
    if error is not None:
        return Response(response_time_ms=elapsed_ms, ip=dial.ip), error
    response = Response(
        body=body,
        response_time_ms=elapsed_ms,
        connected=True,
        ip=dial.ip,
        certificate_expiration_ms=(not_after - datetime.now(UTC)).total_seconds() * 1000,
        certificate_not_after=not_after,
        certificate_valid=problem is None,
        certificate_problem=problem,
    )
    return response, None


def _certificate(check: Target, policy: AddressPolicy, dial: Dial, left: Callable[[], float], *, verify: bool) -> bytes:
    """The server's certificate (DER) after one handshake, verified (raising
    `ssl.SSLCertVerificationError` when it does not verify) or not."""
    sock: socket.socket | None = None
    try:
        sock = dial.open(policy, left, check.timeout_s)
        if check.starttls is not None:
            negotiate(check.starttls, sock, left, check.host, check.timeout_s)
        tls = context((check.ca or True) if verify else False)
        sock = tls.wrap_socket(sock, server_hostname=check.host.rstrip("."), do_handshake_on_connect=False)
        sock.settimeout(left())
        sock.do_handshake()
        der = sock.getpeercert(binary_form=True)
    finally:
        if sock is not None:
            sock.close()
    if not der:
        raise FetchError(f"{check.host} presented no certificate")
    return der


def describe_certificate(der: bytes, host: str) -> tuple[bytes, datetime]:
    """The certificate ``host`` presented as the check's body (JSON: subject, issuer, names,
    not_before, not_after, serial, sha256) and when it expires (its notAfter). `FetchError` for
    one that cannot be parsed."""
    try:
        certificate = x509.load_der_x509_certificate(der)
        not_before, not_after = certificate.not_valid_before_utc, certificate.not_valid_after_utc
        try:
            alternative = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            names = [*alternative.get_values_for_type(x509.DNSName)]
            names += [str(ip) for ip in alternative.get_values_for_type(x509.IPAddress)]
        except x509.ExtensionNotFound:
            names = []
        described = {
            "subject": certificate.subject.rfc4514_string(),
            "issuer": certificate.issuer.rfc4514_string(),
            "names": names,
            "not_before": not_before.isoformat(),
            "not_after": not_after.isoformat(),
            "serial": format(certificate.serial_number, "x"),
            "sha256": hashlib.sha256(der).hexdigest(),
        }
    except ValueError:
        raise FetchError(f"the certificate {host} presented cannot be parsed") from None
    return json.dumps(described).encode(), not_after


KIND = Kind(
    name="tls",
    fields=Fields,
    placeholders=PLACEHOLDERS,
    default_conditions=DEFAULT_CONDITIONS,
    problems=problems,
    stored=stored,
    target=target,
    run=run,
    flag="cert",
    command_line=command_line,
)
