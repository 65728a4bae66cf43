"""When a domain's registration expires, asked of its registry over RDAP (the Registration Data
Access Protocol, the JSON successor of WHOIS).

- The registered domain of a host (`registered`): ``api.acme.example`` is ``acme.example``. The
  rule is offline and simple: the last two labels, or the last three under a well-known two-level
  public suffix (``shop.acme.co.uk`` is ``acme.co.uk``; `TWO_LEVEL`). It is not the whole Public
  Suffix List: a name under a suffix it does not know is cut at two labels.
- The registry's RDAP server: IANA's bootstrap registry for DNS (RFC 9224, at
  ``PULSE_RDAP_BOOTSTRAP_URL``, ``https://data.iana.org/rdap/dns.json`` by default), whose
  ``services`` are pairs of [top-level domains, base URLs]. It is fetched at most once a day per
  process.
- The domain's record: ``GET {base}domain/{name}`` (RFC 9082 §3.1.3), Accept
  ``application/rdap+json``. Its expiry is the ``eventDate`` (RFC 3339) of its ``events`` entry
  whose ``eventAction`` is ``expiration`` (RFC 9083 §4.5).

Every request goes through `pulse.net.fetch` under the address policy, with a timeout. A registry
that does not answer, answers 404 or has no expiration event raises `UnknownExpiryError`, saying why.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
from datetime import UTC, datetime
from typing import Any

from pulse.net import AddressPolicy, Request, fetch

DEFAULT_BOOTSTRAP_URL = "https://data.iana.org/rdap/dns.json"
BOOTSTRAP_TTL_S = 86400.0  # the bootstrap registry is fetched at most once a day per process
TIMEOUT_S = 10.0
ACCEPT = {"Accept": "application/rdap+json, application/json;q=0.9"}

# Public suffixes of two labels under which most registrations are made (a few of the Public
# Suffix List's, https://publicsuffix.org): below them a registered domain has three labels.
TWO_LEVEL = frozenset(
    f"{second}.{tld}"
    for tld, seconds in {
        "uk": "co org me ltd plc net ac gov nhs police sch",
        "au": "com net org edu gov asn id",
        "nz": "co org net ac govt geek gen kiwi maori school",
        "jp": "co ne or ac ad ed go gr lg",
        "kr": "co ne or re pe go ac",
        "br": "com net org gov edu art blog eco emp eng ind inf log",
        "za": "co org net gov ac web",
        "in": "co net org firm gen ind ac edu gov res",
        "cn": "com net org gov edu ac",
        "hk": "com net org gov edu idv",
        "tw": "com net org gov edu idv",
        "sg": "com net org gov edu per",
        "my": "com net org gov edu name",
        "mx": "com net org gob edu",
        "ar": "com net org gob edu int",
        "tr": "com net org gov edu biz info gen web",
        "il": "co org net ac gov muni",
        "id": "co or net ac go web my",
        "th": "co or net ac go in",
        "ua": "com net org gov edu in",
    }.items()
    for second in seconds.split()
)


class UnknownExpiryError(Exception):
    """A domain's expiry cannot be told; the text says why. ``answered``: the registry answered
    (404, no expiration event, a record that is not RDAP), rather than could not be asked."""

    def __init__(self, reason: str, *, answered: bool) -> None:
        super().__init__(reason)
        self.answered = answered


def registered(host: str) -> str | None:
    """The registered domain of ``host`` (lower case, in ASCII), or None for an IP address, a
    name of one label, or a public suffix itself."""
    name = host.strip().rstrip(".").lower()
    if is_address(name):
        return None
    try:
        name = name.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    labels = name.split(".")
    if len(labels) < 2 or not all(labels):
        return None
    if ".".join(labels[-2:]) in TWO_LEVEL:
        return ".".join(labels[-3:]) if len(labels) >= 3 else None
    return ".".join(labels[-2:])


def is_address(host: str) -> bool:
    """Whether ``host`` is an IP address (v4, or v6 with or without brackets)."""
    try:
        ipaddress.ip_address(host.strip().strip("[]"))
    except ValueError:
        return False
    return True


_bootstrap: dict[str, tuple[float, dict[str, str]]] = {}  # by URL: when fetched (monotonic), TLD -> base
_lock = threading.Lock()


def server(tld: str, policy: AddressPolicy, bootstrap_url: str = DEFAULT_BOOTSTRAP_URL) -> str:
    """The base URL (ending in /) of the RDAP server of ``tld``, from the bootstrap registry."""
    with _lock:
        cached = _bootstrap.get(bootstrap_url)
        if cached is None or time.monotonic() - cached[0] >= BOOTSTRAP_TTL_S:
            cached = _bootstrap[bootstrap_url] = (time.monotonic(), _services(_get(bootstrap_url, policy)))
    base = cached[1].get(tld.lower())
    if base is None:
        raise UnknownExpiryError(f"the RDAP bootstrap registry names no server for .{tld}", answered=True)
    return base if base.endswith("/") else base + "/"


def expiry(domain: str, policy: AddressPolicy, bootstrap_url: str = DEFAULT_BOOTSTRAP_URL) -> datetime:
    """When ``domain`` (a registered domain) expires, as its registry's RDAP server says; `UnknownExpiryError`
    when it cannot be told."""
    base = server(domain.rsplit(".", 1)[-1], policy, bootstrap_url)
    record = _get(f"{base}domain/{domain}", policy)
    events = record.get("events")
    for event in events if isinstance(events, list) else []:
        if isinstance(event, dict) and event.get("eventAction") == "expiration":
            return _date(event.get("eventDate"))
    raise UnknownExpiryError("the registry's record has no expiration event", answered=True)


def _get(url: str, policy: AddressPolicy) -> dict[str, Any]:
    """The JSON object at ``url``; `UnknownExpiryError` for anything else."""
    response, error = fetch(Request("GET", url, headers=ACCEPT, timeout_s=TIMEOUT_S), policy)
    if error is not None:
        raise UnknownExpiryError(error, answered=False)
    if response.status == 404:
        raise UnknownExpiryError(f"{_host(url)} does not know it (404)", answered=True)
    if response.status != 200:
        raise UnknownExpiryError(
            f"{_host(url)} answered {response.status}", answered=response.status is not None and response.status < 500
        )
    try:
        found = json.loads(response.body)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise UnknownExpiryError(f"{_host(url)} answered something that is not a JSON object", answered=True)
    return found


def _services(registry: dict[str, Any]) -> dict[str, str]:
    """TLD -> base URL, from a bootstrap registry's ``services`` (an https URL preferred)."""
    found: dict[str, str] = {}
    services = registry.get("services")
    for service in services if isinstance(services, list) else []:
        if not (isinstance(service, list) and len(service) == 2):
            continue
        tlds, urls = service
        urls = [u for u in urls if isinstance(u, str)] if isinstance(urls, list) else []
        urls.sort(key=lambda u: not u.startswith("https:"))
        for tld in tlds if isinstance(tlds, list) and urls else []:
            if isinstance(tld, str):
                found.setdefault(tld.lower(), urls[0])
    return found


def _date(text: object) -> datetime:
    """An RFC 3339 date-time, in UTC (one without an offset is read as UTC)."""
    try:
        when = datetime.fromisoformat(str(text))
    except ValueError:
        raise UnknownExpiryError(
            f"the expiration event's date {str(text)[:40]!r} is not an RFC 3339 date-time", answered=True
        ) from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _host(url: str) -> str:
    """The host of ``url``, to name in a problem (never its path or query)."""
    return url.split("//", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]
