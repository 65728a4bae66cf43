"""The ``dns`` kind: ask a resolver for one record type of one name, with dnspython, and judge the
reply by its response code and its answer.

    - key: mail-dns
      name: Mail DNS
      kind: dns
      query: acme.example              # the name asked about
      record: MX                       # optional: A (the default), AAAA, CNAME, MX, TXT, NS or SOA
      resolver: "192.0.2.53:53"        # optional: an IP address, with a port ([v6]:port for IPv6);
                                       # the system's (/etc/resolv.conf) when left out
      conditions: ["[DNS_RCODE] == NOERROR", "[BODY] == pat(*mail.acme.example.)"]

`[DNS_RCODE]` is the reply's response code as text (NOERROR, NXDOMAIN, SERVFAIL, REFUSED…, the
mnemonics of RFC 1035 section 4.1.1 and RFC 6895); `[BODY]` the answer's records of the type asked
for, in presentation format (RFC 1035 section 5.1: MX ``10 mail.acme.example.``, TXT quoted), one
a line, sorted in DNSSEC canonical order (RFC 4034 section 6.3, numeric for A and MX preferences)
so that a resolver rotating its records does not flip a check. For an alias, `[BODY]` holds the
records at the end of its CNAME chain, the chain itself left out; a chain that loops, runs past
`MAX_CNAMES` or leads nowhere (ends without such records in a NOERROR reply) is an error, the
reply's `[DNS_RCODE]` still read (see `answer`). A name that does not exist is an answer
(NXDOMAIN), not an error, at the end of a chain too: it fails the condition `[DNS_RCODE] ==
NOERROR`. A resolver that does not answer within the timeout is an error.

The question is one message with recursion desired, sent over UDP and asked again over TCP when
the UDP reply is truncated (RFC 7766 section 5), as dnspython's `dns.query.udp_with_fallback`
does, but under one deadline for both. A UDP datagram that is not the reply to the question
(another ID: a late answer to an earlier question, or an off-path spoofer's; another address or
port; no DNS message at all) is passed over and the reply waited for, as RFC 5452 section 9.1 asks
of a resolver: only a deadline with no reply is an error. The resolver is queried directly
(`dns.query`), not through dnspython's stub resolver, which folds SERVFAIL and REFUSED into one
exception and would hide the response code.

The resolver is held to the address policy like any connection (`pulse.net.dial`): its address is
checked by `AddressPolicy.enforce` before any packet is sent, the system's too, so a loopback stub
resolver such as systemd-resolved's 127.0.0.53 is refused unless private addresses are allowed
(``PULSE_ALLOW_PRIVATE_TARGETS``). Of the system's resolvers, the first allowed one is asked. The
fields are stored in the component's ``target`` column.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.resolver
import dns.rrset
from pydantic import Field, field_validator

from pulse.models import utcnow
from pulse.net import AddressPolicy, AddressRefused, Response
from pulse.spec import Strict
from pulse.uptime.check import CheckResult, judge
from pulse.uptime.kinds.kind import CLEARED, Kind, Stored

RECORDS = ("A", "AAAA", "CNAME", "MX", "TXT", "NS", "SOA")
DEFAULT_CONDITIONS = ("[DNS_RCODE] == NOERROR",)
PLACEHOLDERS = frozenset({"[DNS_RCODE]", "[BODY]", "[RESPONSE_TIME]"})
MAX_CNAMES = 8  # CNAMEs followed from the query name before its chain is refused as too long
PORT = 53  # a resolver's port when none is written, and the system's resolvers' port
RESOLV_CONF = "/etc/resolv.conf"  # where the system's resolvers are named

# A label of letters, digits, hyphens and underscores (_dmarc, _sip._tcp), not starting or ending
# with a hyphen (RFC 1035 section 2.3.1, RFC 2782 for the underscores).
_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)")


def query_name(value: str) -> str:
    """A domain name to ask about: ASCII labels of at most 63 characters, 253 in all, a final dot
    allowed (``.`` alone is the root)."""
    if value == ".":
        return value
    name = value.removesuffix(".")
    if not name or len(name) > 253 or not all(_LABEL.fullmatch(label) for label in name.split(".")):
        raise ValueError(
            "not a domain name (labels of letters, digits, hyphens and underscores, separated by dots;"
            " no scheme, port or path)"
        )
    return value


def resolver_address(value: str) -> tuple[str, int]:
    """A resolver as written, ``192.0.2.53``, ``192.0.2.53:5353``, ``2001:db8::53`` or
    ``[2001:db8::53]:5353``, as (IP address, port)."""
    text, port = value.strip(), PORT
    if text.startswith("["):
        inside, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError("write an IPv6 resolver as [address]:port, e.g. [2001:db8::53]:53")
        text, port = inside, _port(rest[1:]) if rest else PORT
    elif text.count(":") == 1:
        text, written = text.split(":")
        port = _port(written)
    try:
        return str(ipaddress.ip_address(text)), port
    except ValueError:
        raise ValueError(
            f"{value!r} is not an IP address: a resolver is named by its address (a host name would need"
            " a resolver to find it), with an optional port, e.g. 192.0.2.53:53 or [2001:db8::53]:53"
        ) from None


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError(f"{text!r} is not a port (1 to 65535)")
    return int(text)


def _joined(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


@dataclasses.dataclass(frozen=True)
class Target:
    """What one dns check asks.

    Parameters:
      query: the domain name asked about.
      record: the record type, one of `RECORDS`.
      resolver: the resolver's (IP address, port); None for the system's (`RESOLV_CONF`).
      timeout_s: seconds; bounds the whole check, the retry over TCP included.
    """

    query: str
    record: str = "A"
    resolver: tuple[str, int] | None = None
    timeout_s: float = 10.0


class Fields(Strict):
    """A dns check's fields in the configuration file."""

    query: str | None = Field(None, max_length=254)
    record: str = "A"
    resolver: str | None = Field(None, max_length=64)

    @field_validator("query")
    @classmethod
    def _query(cls, value: str | None) -> str | None:
        return value if value is None else query_name(value)

    @field_validator("record")
    @classmethod
    def _record(cls, value: str) -> str:
        if value.upper() not in RECORDS:
            raise ValueError(f"{value!r} is not a record type a dns check asks for (use {', '.join(RECORDS)})")
        return value.upper()

    @field_validator("resolver")
    @classmethod
    def _resolver(cls, value: str | None) -> str | None:
        return value if value is None else _joined(*resolver_address(value))


def problems(spec: Fields) -> list[str]:
    return [] if spec.query else ["a dns check needs a query (the name asked about)"]


def stored(spec: Fields) -> dict[str, Any]:
    return CLEARED | {"target": {"query": spec.query, "record": spec.record, "resolver": spec.resolver}}


def target(row: Stored) -> Target:
    fields = row.target or {}
    resolver = fields.get("resolver")
    return Target(
        query=str(fields.get("query", "")),
        record=str(fields.get("record", "A")),
        resolver=resolver_address(resolver) if resolver else None,
        timeout_s=row.timeout_s,
    )


def command_line(name: str, options: Mapping[str, Any]) -> Target:
    """The target of ``pulse check --dns NAME [--type MX] [--resolver IP[:PORT]]``."""
    record = str(options.get("record") or "A").upper()
    if record not in RECORDS:
        raise ValueError(f"--type {record}: not a record type a dns check asks for (use {', '.join(RECORDS)})")
    try:
        query = query_name(name)
    except ValueError as e:
        raise ValueError(f"--dns {name!r}: {e}") from None
    resolver = options.get("resolver")
    try:
        address = resolver_address(resolver) if resolver else None
    except ValueError as e:
        raise ValueError(f"--resolver: {e}") from None
    return Target(query, record, address, timeout_s=options["timeout_s"])


def run(check: Target, condition_texts: Sequence[str], extract: dict[str, str], policy: AddressPolicy) -> CheckResult:
    """Ask the resolver and evaluate the conditions (and extractions) on its reply."""
    started_at = utcnow()
    response, error = exchange(check, policy)
    return judge(started_at, response, error, condition_texts or DEFAULT_CONDITIONS, extract)


def exchange(check: Target, policy: AddressPolicy) -> tuple[Response, str | None]:
    """Ask the question; never raises for a network problem. Returns the `Response` (``body``
    the answer, ``dns_rcode`` the response code, ``ip`` the resolver, ``connected`` True once a
    reply came) and an error text, None when a reply came."""
    started = time.perf_counter()
    deadline = time.monotonic() + check.timeout_s
    ip, port = check.resolver or (None, PORT)
    try:
        ip, port = _resolver(check.resolver, policy)
        query = dns.message.make_query(check.query, check.record)
        reply = _ask(query, ip, port, lambda: deadline - time.monotonic())
    except AddressRefused as e:
        return Response(response_time_ms=_since(started), ip=ip), str(e)
    except dns.exception.Timeout:
        return Response(response_time_ms=_since(started), ip=ip), (
            f"timed out after {check.timeout_s} s: no answer from resolver {_joined(str(ip), port)}"
        )
    except (dns.exception.DNSException, OSError, ValueError) as e:
        return Response(response_time_ms=_since(started), ip=ip), _reason(e, f"resolver {_joined(str(ip), port)}")
    body, problem = answer(reply, query.question[0].name, check.record)
    return (
        Response(
            body=body.encode(),
            response_time_ms=_since(started),
            connected=True,
            ip=ip,
            dns_rcode=dns.rcode.to_text(reply.rcode()),
        ),
        problem,
    )


def answer(reply: dns.message.Message, name: dns.name.Name, record: str) -> tuple[str, str | None]:
    """The records of type ``record`` at the end of the CNAME chain that starts at ``name`` in the
    reply's answer, one a line, in canonical order; and what is wrong with the chain, or None.

    A chain is followed (RFC 1034 section 3.6.2: "CNAME chains should be followed and CNAME loops
    signalled as an error") for every type but CNAME itself, and refused when it loops, when it is
    longer than `MAX_CNAMES`, or when it leads nowhere: ends at a name without such records in a
    NOERROR reply of a resolver that offers recursion (RA; an authoritative-only server ends a
    chain where it leaves its zones, for others to follow). NXDOMAIN at its end is the response
    code's to say (RFC 6604: the rcode is about the last name), not an error."""
    wanted = dns.rdatatype.from_text(record)
    chain = [name]
    while (records := _records(reply, chain[-1], wanted)) is None and wanted != dns.rdatatype.CNAME:
        alias = _records(reply, chain[-1], dns.rdatatype.CNAME)
        if alias is None:
            break
        chain.append(alias[0].target)
        if chain[-1] in chain[:-1]:
            return "", f"the CNAME chain of {name} loops: {_arrows(chain)}"
        if len(chain) > MAX_CNAMES + 1:
            return "", f"the CNAME chain of {name} is longer than {MAX_CNAMES} CNAMEs: {_arrows(chain)}"
    if records is not None:
        return "\n".join(rdata.to_text() for rdata in sorted(records)), None
    if len(chain) > 1 and reply.rcode() == dns.rcode.NOERROR and reply.flags & dns.flags.RA:
        return "", f"the CNAME chain of {name} leads nowhere: {chain[-1]} has no {record} record in the answer"
    return "", None


def _records(
    reply: dns.message.Message, name: dns.name.Name, rdtype: dns.rdatatype.RdataType
) -> dns.rrset.RRset | None:
    return reply.get_rrset(reply.answer, name, dns.rdataclass.IN, rdtype)


def _arrows(chain: Sequence[dns.name.Name]) -> str:
    return " → ".join(str(name) for name in chain)


def _resolver(named: tuple[str, int] | None, policy: AddressPolicy) -> tuple[str, int]:
    """The resolver to ask: the one named, or the first allowed one of the system's; raises
    `AddressRefused` before any packet when none is allowed."""
    if named is not None:
        policy.enforce(named[0], named[0])
        return named
    system = system_resolvers()
    refused: list[AddressRefused] = []
    for ip in system:
        try:
            policy.enforce(ip, ip)
        except AddressRefused as e:
            refused.append(e)
            continue
        return ip, PORT
    which = (
        f"every resolver in {RESOLV_CONF} is refused"
        if len(system) > 1
        else f"it is the system's resolver ({RESOLV_CONF})"
    )
    raise AddressRefused(f"{refused[0]}; {which}: name an allowed one in the check's resolver field")


def system_resolvers() -> list[str]:
    """The system's resolvers' addresses, as `RESOLV_CONF` names them (read on every check: the
    file is small and may change). Raises `dns.resolver.NoResolverConfiguration` when none."""
    nameservers = dns.resolver.Resolver(filename=RESOLV_CONF).nameservers
    return [str(server) for server in nameservers]


def _ask(query: dns.message.Message, ip: str, port: int, left: Callable[[], float]) -> dns.message.Message:
    """The reply over UDP, or over TCP when the UDP one is truncated (TC set), each waited for
    only as long as the deadline leaves. A datagram that is not the reply is passed over:
    dnspython's ``ignore_unexpected`` (another address or port) and ``ignore_errors`` (another ID
    or question, or no DNS message; 2.6.1 and later, which still raise `Truncated` for the reply)."""
    try:
        return dns.query.udp(
            query,
            ip,
            timeout=_positive(left()),
            port=port,
            raise_on_truncation=True,
            ignore_unexpected=True,
            ignore_errors=True,
        )
    except dns.message.Truncated:
        return dns.query.tcp(query, ip, timeout=_positive(left()), port=port)


def _positive(seconds: float) -> float:
    if seconds <= 0:
        raise dns.exception.Timeout
    return seconds


def _reason(error: Exception, resolver: str) -> str:
    """What went wrong asking ``resolver`` (a timeout aside), in a few words."""
    if isinstance(error, dns.resolver.NoResolverConfiguration):
        return f"no system resolver: {RESOLV_CONF} names none (name one in the check's resolver field)"
    if isinstance(error, ConnectionRefusedError):
        return f"connection refused by {resolver}"
    if isinstance(error, OSError):
        return f"cannot reach {resolver}: {error.strerror or type(error).__name__}"
    if isinstance(error, dns.exception.DNSException):
        return f"a malformed reply from {resolver} ({type(error).__name__})"
    return f"cannot ask {resolver}: {error}"  # a ValueError: a name dnspython cannot encode


def _since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


KIND = Kind(
    name="dns",
    fields=Fields,
    placeholders=PLACEHOLDERS,
    default_conditions=DEFAULT_CONDITIONS,
    problems=problems,
    stored=stored,
    target=target,
    run=run,
    flag="dns",
    command_line=command_line,
)
