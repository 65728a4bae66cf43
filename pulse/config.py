"""Settings, read once from the environment (`PULSE_*` variables).

Every setting is documented in `docker/.env.example`. A bad value raises `ConfigError` whose text
names the variable and the reason, never the value of a URL (it may hold a password).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import ipaddress
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import SplitResult, quote, unquote, urlsplit

from pulse.errors import ConfigError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
SECRETS = frozenset(
    {"resend_api_key", "twilio_auth_token", "vapid_private_key", "ack_secret", "locations_secret", "location_key"}
)
#: Settings that were renamed: the old variable still works when the new one is not set.
RENAMED = {
    "PULSE_ALLOW_PRIVATE_TARGETS": "PULSE_CHECK_ALLOW_PRIVATE",
    "PULSE_ALLOW_LINK_LOCAL_TARGETS": "PULSE_CHECK_ALLOW_LINK_LOCAL",
    # A setting's name ends in its unit.
    "PULSE_TIME_LIMIT_S": "PULSE_TIME_LIMIT",
    "PULSE_TIME_LIMIT_GRACE_S": "PULSE_TIME_LIMIT_GRACE",
    "PULSE_HEARTBEAT_MAX_AGE_S": "PULSE_HEARTBEAT_MAX_AGE",
    "PULSE_NOTIFY_TIMEOUT_S": "PULSE_NOTIFY_TIMEOUT",
    "PULSE_MAX_MEMORY_PER_PROCESS_MIB": "PULSE_MAX_MEMORY_PER_PROCESS",
    "PULSE_DEAD_LETTER_RETENTION_DAYS": "PULSE_DEAD_LETTER_RETENTION",
}


@dataclasses.dataclass(frozen=True)
class Settings:
    """Parameters:
    broker_url: AMQP URL of RabbitMQ, or several separated by commas (the nodes of a cluster, tried
      in order: a connection goes to the first that answers), or ``stub://`` for dramatiq's
      in-memory StubBroker.
    queue_type: ``classic`` or ``quorum`` (replicated over a cluster's nodes): the type every
      queue is declared with. A queue keeps its type: `pulse queues migrate` changes it.
    database_url: PostgreSQL URL; the database is created by ``pulse migrate`` if missing.
    log_level: one of DEBUG, INFO, WARNING, ERROR, CRITICAL.
    metrics_port: TCP port of the workers' Prometheus endpoint.
    metrics_dir: directory for prometheus-client's multiprocess files.
    rabbitmq_api_url: RabbitMQ management API (for unacked counts and queue types), or several
      separated by commas, tried in order; derived from the broker URL's nodes.
    max_retries: retries of a transiently failing message before it is dead-lettered.
    time_limit_s: default time limit of an actor, in seconds.
    time_limit_grace_s: seconds a message may run past its time limit (stuck in code the limit cannot
      interrupt) before its worker process is replaced.
    max_messages_per_process: messages a worker process processes before the worker processes of its
      run are restarted (`pulse.middleware.recycling`; 0: never).
    max_memory_per_process_mib: MiB of resident memory past which a worker process has the worker
      processes of its run restarted (0: never).
    backlog_bound: messages waiting in the `uptime` or `metrics` queue past which its loop skips the
      checks or polls coming due, stale before a worker could take them (`pulse.recurring.loop`; 0: never).
    heartbeat_max_age_s: seconds after which the scheduler heartbeat counts as stale.
    allow_private_targets: outgoing requests (uptime checks, and notification deliveries to
      webhooks, Slack, Discord, Teams and Web Push) may reach private and loopback addresses.
    allow_link_local_targets: they may reach link-local and cloud-metadata addresses.
    notify_timeout_s: seconds for one notification delivery (connect, send, answer).
    public_url: the status page's address; notifications link to it.
    email_from: the sender of notification emails, e.g. ``Pulse <alerts@example.com>``.
    resend_api_key: Resend API key; when set, email goes through Resend.
    resend_url: Resend's API base URL.
    smtp_url: ``smtp://user:password@host:587`` (STARTTLS when offered) or ``smtps://...:465``;
      email goes through SMTP when no Resend key is set.
    twilio_account_sid, twilio_auth_token, twilio_from: Twilio credentials and sender for SMS.
    twilio_url: Twilio's API base URL.
    vapid_private_key: the VAPID private key for Web Push (PEM, or base64url DER / raw).
    vapid_subject: the VAPID contact, ``mailto:...`` or ``https:...``.
    ack_url: where a page's acknowledgement link points (the web application's endpoint, or
      ``pulse serve``'s); pages carry a link only when it and ``ack_secret`` are set.
    ack_secret: the key that signs acknowledgement links, at least 32 characters.
    dead_letter_retention_days: days a dead-letter record is kept (`pulse dlq`), then deleted by cleanup.
    serve_host, serve_port: the address `pulse serve` listens on (the inbound HTTP service).
    serve_metrics_host, serve_metrics_port: the address of its Prometheus endpoint (``/metrics``):
      loopback by default, as the telemetry is for the operator's scraper, not the public.
    serve_request_deadline_s: seconds a request to it has to arrive whole (a slow client's cut).
    serve_max_connections: connections it keeps open at once; one more closes the one whose request
      has been idle the longest between two requests, else the one whose request has been arriving
      the longest (a slow client's), or is answered 503 and closed when every one runs a request.
    serve_max_connections_per_address: connections one client address keeps open at once, counted
      and made room for in the same way among its own connections; a trusted proxy's have no cap
      but ``serve_max_connections``.
    serve_trusted_proxies: addresses and networks (``10.0.0.0/8``), separated by commas, whose
      ``X-Forwarded-For`` and ``X-Forwarded-Proto`` name the client; none by default: the peer's
      address is the client's.
    serve_public_url: the address the outside reaches `pulse serve` at, ``https://host[:port]`` (its
      TLS proxy's): Twilio's signatures are made over it (`pulse.oncall.smshook`); when it and the
      Twilio credentials are set, SMS pages ask for a reply code.
    rdap_bootstrap_url: IANA's RDAP bootstrap registry for DNS (RFC 9224), which names each
      top-level domain's RDAP server, for domain expiry warnings (`pulse.uptime.rdap`).
    location: this worker is a location's (`pulse.locations`): it consumes that location's queue
      only, checks what comes, and sends the results back over RabbitMQ; it needs no database.
    location_key: the key the location's batches of checks are sealed with (`pulse locations key`).
    location_canaries: ``host:port`` items, separated by commas, that a location's worker asks when
      a check fails: when none accepts a connection, its own network is down and its failed checks
      abstain (`pulse.locations.canaries`).
    locations_secret: where the central workers run, the secret every location's key derives from,
      at least 32 characters; needed once a component is checked from locations.
    location_results_per_minute: results each location may send a central worker process in a
      minute; past it, its further messages that minute are dropped (`pulse.locations.allowance`).
    """

    broker_url: str = "amqp://guest:guest@127.0.0.1:5672/%2F"
    queue_type: str = "classic"
    database_url: str = "postgresql://postgres@127.0.0.1:5432/pulse"
    log_level: str = "INFO"
    metrics_port: int = 9191
    metrics_dir: str = os.path.join(tempfile.gettempdir(), "pulse-metrics")
    rabbitmq_api_url: str = ""
    max_retries: int = 3
    time_limit_s: int = 300
    time_limit_grace_s: int = 30
    max_messages_per_process: int = 50_000
    max_memory_per_process_mib: int = 200
    backlog_bound: int = 1000
    heartbeat_max_age_s: int = 180
    allow_private_targets: bool = True
    allow_link_local_targets: bool = False
    notify_timeout_s: float = 10.0
    public_url: str = ""
    email_from: str = ""
    resend_api_key: str = ""
    resend_url: str = "https://api.resend.com"
    smtp_url: str = ""
    twilio_account_sid: str = ""
    twilio_auth_token: str = ""
    twilio_from: str = ""
    twilio_url: str = "https://api.twilio.com"
    vapid_private_key: str = ""
    vapid_subject: str = ""
    ack_url: str = ""
    ack_secret: str = ""
    dead_letter_retention_days: int = 30
    serve_host: str = "127.0.0.1"
    serve_port: int = 8080
    serve_metrics_host: str = "127.0.0.1"
    serve_metrics_port: int = 9192
    serve_request_deadline_s: float = 10.0
    serve_max_connections: int = 64
    serve_max_connections_per_address: int = 32
    serve_trusted_proxies: str = ""
    serve_public_url: str = ""
    rdap_bootstrap_url: str = "https://data.iana.org/rdap/dns.json"
    location: str = ""
    location_key: str = ""
    location_canaries: str = ""
    locations_secret: str = ""
    location_results_per_minute: int = 60_000

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``env`` (default ``os.environ``); raise ConfigError on bad values.

        Every bad variable is reported, in one line.
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        errors: list[str] = []
        for field in dataclasses.fields(cls):
            name = "PULSE_" + field.name.upper()
            if not env.get(name, "").strip() and env.get(RENAMED.get(name, ""), "").strip():
                name = RENAMED[name]
            raw = env.get(name, "").strip()
            if not raw:
                continue
            try:
                values[field.name] = _PARSERS[field.name](raw)
            except ValueError as e:
                errors.append(f"{name}: {e}")
        if errors:
            raise ConfigError("; ".join(errors))
        settings = cls(**values)
        if not settings.rabbitmq_api_url and not settings.broker_url.startswith("stub:"):
            api = ",".join(management_url(url) for url in settings.broker_urls)
            settings = dataclasses.replace(settings, rabbitmq_api_url=api)
        return settings

    @property
    def broker_urls(self) -> list[str]:
        """The broker URL of each node, in the order they are tried."""
        return split(self.broker_url)

    @property
    def rabbitmq_api_urls(self) -> list[str]:
        """The management API's URL on each node, in the order they are tried."""
        return split(self.rabbitmq_api_url)

    @property
    def vhost(self) -> str:
        """The RabbitMQ virtual host named by the broker URL (every node's URL names the same)."""
        return _vhost(self.broker_urls[0])

    @property
    def database_name(self) -> str:
        return unquote(urlsplit(self.database_url).path.lstrip("/"))

    def __repr__(self) -> str:
        shown = {
            f.name: ("***" if v else "") if f.name in SECRETS else redact(v) if f.name.endswith("_url") else v
            for f in dataclasses.fields(self)
            for v in [getattr(self, f.name)]
        }
        return "Settings(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"


def renamed_in_use(env: Mapping[str, str] | None = None) -> list[str]:
    """One warning line for each renamed setting still set under its old name."""
    env = os.environ if env is None else env
    return [
        f"{old} is now called {new}: {'it is ignored, as ' + new + ' is set' if env.get(new) else 'rename it'}"
        for new, old in RENAMED.items()
        if env.get(old, "").strip()
    ]


def split(urls: str) -> list[str]:
    """The URLs of a comma-separated list (one URL gives a list of one)."""
    return [url.strip() for url in urls.split(",") if url.strip()]


def _vhost(url: str) -> str:
    path = urlsplit(url).path
    return unquote(path[1:]) if len(path) > 1 else "/"


def redact(url: str) -> str:
    """The URL (or each of a comma-separated list) with its password replaced by ``***``, for
    logs and error texts."""
    if "," in url:
        return ",".join(redact(one) for one in split(url))
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    netloc = f"{parts.username}:***@{host}" if parts.username else f"***@{host}"
    return parts._replace(netloc=netloc).geturl()


def management_url(broker_url: str) -> str:
    """Default management API URL: same host and credentials as the broker, port 15672."""
    parts = urlsplit(broker_url)
    user = quote(unquote(parts.username or "guest"), safe="")
    password = quote(unquote(parts.password or "guest"), safe="")
    scheme = "https" if parts.scheme == "amqps" else "http"
    return f"{scheme}://{user}:{password}@{parts.hostname}:15672"


def _url(schemes: tuple[str, ...], example: str, need_path: bool = False) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        try:
            parts: SplitResult = urlsplit(raw)
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            raise ValueError(f"not a valid URL (expected {example})") from None
        if parts.scheme == "stub" and "stub" in schemes:
            return raw
        if parts.scheme not in schemes or not parts.hostname:
            raise ValueError(f"not a valid URL (expected {example})")
        if need_path and not parts.path.strip("/"):
            raise ValueError(f"the URL names no database (expected {example})")
        if parts.scheme == "postgres":  # the libpq alias; peewee recognises only postgresql://
            return parts._replace(scheme="postgresql").geturl()
        return raw

    return parse


def _urls(parse: Callable[[str], str]) -> Callable[[str], str]:
    """A parser of one URL or several separated by commas (a cluster's nodes), each read by ``parse``."""

    def parse_all(raw: str) -> str:
        urls = split(raw)
        if not urls:
            raise ValueError("no URL")
        for number, url in enumerate(urls, 1):
            try:
                parse(url)
            except ValueError as e:
                raise ValueError(f"node {number}: {e}" if len(urls) > 1 else str(e)) from None
        return ",".join(urls)

    return parse_all


def _broker_urls(raw: str) -> str:
    urls = _urls(_url(("amqp", "amqps", "stub"), "amqp://user:password@host:5672/vhost or stub://"))(raw)
    if len(split(urls)) > 1:
        if any(url.startswith("stub:") for url in split(urls)):
            raise ValueError("stub:// stands alone, never in a list of nodes")
        if len({_vhost(url) for url in split(urls)}) > 1:
            raise ValueError("every node's URL must name the same vhost")
    return urls


def _one_of(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if raw.lower() not in choices:
            raise ValueError(f"{raw!r} is not one of {', '.join(choices)}")
        return raw.lower()

    return parse


def _log_level(raw: str) -> str:
    level = raw.upper()
    if level not in LOG_LEVELS:
        raise ValueError(f"unknown log level {raw!r} (use one of {', '.join(LOG_LEVELS)})")
    return level


def _number(low: float, high: float, what: str, *, whole: bool = True) -> Callable[[str], Any]:
    """A parser of numbers between ``low`` and ``high``: whole ones, or any (``whole=False``)."""

    def parse(raw: str) -> int | float:
        try:
            value = int(raw) if whole else float(raw)
        except ValueError:
            raise ValueError(f"{raw!r} is not a {'whole ' if whole else ''}number") from None
        if not low <= value <= high:
            shown = "{}" if whole else "{:g}"
            raise ValueError(f"{what} must be between {shown.format(low)} and {shown.format(high)}, not {raw}")
        return value

    return parse


def _bool(raw: str) -> bool:
    value = raw.lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{raw!r} is not a boolean (use true or false)")


def _origin(raw: str) -> str:
    """An origin: ``scheme://host[:port]``, no path beyond ``/``, no query, no fragment, no credentials;
    returned without a trailing slash."""
    example = "https://hooks.example.com"
    _url(("http", "https"), example)(raw)
    parts = urlsplit(raw)
    if parts.path not in ("", "/") or "?" in raw or "#" in raw:
        raise ValueError(f"give the address alone, without a path, query or fragment (expected {example})")
    if "@" in parts.netloc:
        raise ValueError(f"the address must not carry credentials (expected {example})")
    return raw.rstrip("/")


def _secret(length: int) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if len(raw) < length:
            raise ValueError(f"too short: use at least {length} random characters (openssl rand -hex 32)")
        return raw

    return parse


def _fernet_key(raw: str) -> str:
    try:
        if len(base64.urlsafe_b64decode(raw.encode())) == 32:
            return raw
    except ValueError:
        pass
    raise ValueError("not a location key (44 characters, as `pulse locations key NAME` prints it)")


#: A location's name: what ``PULSE_LOCATION`` and a component's ``locations`` write.
LOCATION_NAME = re.compile(r"[a-z][a-z0-9-]{0,31}")

Canary = tuple[str, int]


def location_name(value: str) -> str:
    """``value`` if it is a location's name, else ValueError saying what one is. (Whether such a
    location exists is `pulse.locations`' concern.)"""
    if not LOCATION_NAME.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a location name (lowercase letters, digits and hyphens, starting with a letter, "
            "at most 32)"
        )
    return value


def parse_canaries(raw: str) -> tuple[Canary, ...]:
    """``host:port`` items separated by commas (an IPv6 address in brackets: ``[2606:4700::1111]:443``);
    ValueError naming a bad one: the canaries of a location's worker (`pulse.locations.canaries`)."""
    found = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        host, colon, port = item.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise ValueError(f"{item!r} is not host:port (e.g. 1.1.1.1:53, example.com:443)")
        found.append((host, int(port)))
    return tuple(found)


def _canaries(raw: str) -> str:
    parse_canaries(raw)
    return raw


def _networks(raw: str) -> str:
    """Addresses and networks (``192.0.2.7``, ``10.0.0.0/8``, ``2001:db8::/32``) separated by commas;
    returned as written, without spaces."""
    items = split(raw)
    for item in items:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address or network (expected 10.0.0.5 or 10.0.0.0/8)") from None
    return ",".join(items)


def _directory(raw: str) -> str:
    if not os.path.isabs(raw):
        raise ValueError(f"{raw!r} is not an absolute path")
    return raw


_PARSERS: dict[str, Callable[[str], Any]] = {
    "broker_url": _broker_urls,
    "queue_type": _one_of("classic", "quorum"),
    "database_url": _url(("postgresql", "postgres"), "postgresql://user:password@host:5432/dbname", True),
    "log_level": _log_level,
    "metrics_port": _number(1, 65535, "the port"),
    "metrics_dir": _directory,
    "rabbitmq_api_url": _urls(_url(("http", "https"), "http://user:password@host:15672")),
    "max_retries": _number(0, 20, "the number of retries"),
    # RabbitMQ cancels a consumer holding a message for 30 minutes: stay well below.
    "time_limit_s": _number(1, 1500, "the time limit in seconds"),
    "time_limit_grace_s": _number(1, 240, "the grace in seconds"),
    # Not Celery's 1,000: a restart replaces every worker process of the run and stops them for
    # seconds (pulse.middleware.recycling): at a busy process's pace, 1,000 would restart them
    # every minute or two.
    "max_messages_per_process": _number(0, 100_000_000, "the number of messages"),
    "max_memory_per_process_mib": _number(0, 1_048_576, "the memory in MiB"),
    "backlog_bound": _number(0, 1_000_000, "the number of messages"),
    "heartbeat_max_age_s": _number(60, 86400, "the heartbeat age in seconds"),
    "allow_private_targets": _bool,
    "allow_link_local_targets": _bool,
    "notify_timeout_s": _number(0.1, 120, "the timeout in seconds", whole=False),
    "public_url": _url(("http", "https"), "https://status.example.com"),
    "email_from": str,
    "resend_api_key": str,
    "resend_url": _url(("http", "https"), "https://api.resend.com"),
    "smtp_url": _url(("smtp", "smtps"), "smtp://user:password@host:587 or smtps://user:password@host:465"),
    "twilio_account_sid": str,
    "twilio_auth_token": str,
    "twilio_from": str,
    "twilio_url": _url(("http", "https"), "https://api.twilio.com"),
    "vapid_private_key": str,
    "vapid_subject": str,
    "ack_url": _url(("http", "https"), "https://status.example.com/ack"),
    "ack_secret": _secret(32),
    "dead_letter_retention_days": _number(1, 3650, "the retention in days"),
    "serve_host": str,
    "serve_port": _number(1, 65535, "the port"),
    "serve_metrics_host": str,
    "serve_metrics_port": _number(1, 65535, "the port"),
    "serve_request_deadline_s": _number(0.5, 300, "the deadline in seconds", whole=False),
    "serve_max_connections": _number(1, 100_000, "the number of connections"),
    "serve_max_connections_per_address": _number(1, 100_000, "the number of connections"),
    "serve_trusted_proxies": _networks,
    "serve_public_url": _origin,
    "rdap_bootstrap_url": _url(("http", "https"), "https://data.iana.org/rdap/dns.json"),
    "location": location_name,
    "location_key": _fernet_key,
    "location_canaries": _canaries,
    "locations_secret": _secret(32),
    "location_results_per_minute": _number(1, 100_000_000, "the number of results"),
}


@functools.cache
def get_settings() -> Settings:
    """The process's settings, read from the environment on first use."""
    return Settings.from_env()
