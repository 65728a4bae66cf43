"""Who hears about what: an organization's notification channels and subscribers, as declared in
the configuration file (see `pulse.configfile`), validated and written with the rest of it. The
kinds and the fields each takes come from the channels' registry (`CHANNELS`).

    channels:
      - key: ops-slack
        type: slack                       # email, sms, slack, discord, teams, webhook, push
        url: ${SLACK_WEBHOOK_URL}         # secrets may be ${ENV_VAR} references
        events: [incident.opened, incident.resolved]   # default: every event
        components: [api]                               # default: every component
    subscribers:
      - email: alice@acme.example
      - phone: "+15551234567"
      - webhook: https://hooks.acme.example/pulse
        secret: ${HOOK_SECRET}
      - push: {endpoint: https://push.example/..., keys: {p256dh: ..., auth: ...}}
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from pulse.models import NotificationChannel, Subscriber, utcnow
from pulse.models.event import CERTIFICATE_EXPIRING, DOMAIN_EXPIRING, EVENT_TYPES, ONCALL_EXHAUSTED
from pulse.notifications.channels import CHANNELS, SUBSCRIBER_KINDS
from pulse.spec import SLUG, Strict, http_url, takes

_EMAIL = re.compile(r"^[^@\s<>,;\"]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?\.[A-Za-z]{2,63}$")
_PHONE = re.compile(r"^\+[1-9][0-9]{6,14}$")  # E.164
_BASE64URL = re.compile(r"^[A-Za-z0-9_-]+={0,2}$")
_SETTINGS = ("url", "secret", "to", "endpoint", "keys")  # the fields of ChannelSpec a kind may take

if TYPE_CHECKING:
    Kind = str
else:
    Kind = Literal[tuple(CHANNELS)]


def _events(values: list[str]) -> list[str]:
    for value in values:
        if value not in EVENT_TYPES:
            raise ValueError(f"unknown event type {value!r} (use {', '.join(EVENT_TYPES)})")
    return values


def check_email(value: str) -> str:
    if not _EMAIL.match(value):
        raise ValueError(f"{value!r} is not an email address")
    return value


def check_phone(value: str) -> str:
    if not _PHONE.match(value):
        raise ValueError(f"{value!r} is not a phone number in E.164 form, e.g. +15551234567")
    return value


class PushKeys(Strict):
    p256dh: str = Field(min_length=80, max_length=100, pattern=_BASE64URL.pattern)
    auth: str = Field(min_length=16, max_length=32, pattern=_BASE64URL.pattern)


class _Filters(Strict):
    events: list[str] = Field(default_factory=list, max_length=20)
    components: list[str] = Field(default_factory=list, max_length=10_000)

    _check_events = field_validator("events")(_events)


class ChannelSpec(_Filters):
    key: str = Field(pattern=SLUG)
    type: Kind
    enabled: bool = True
    url: str | None = Field(None, max_length=2048)
    secret: str | None = Field(None, min_length=16, max_length=256)
    to: str | list[str] | None = None
    endpoint: str | None = Field(None, max_length=2048)
    keys: PushKeys | None = None

    _check_url = field_validator("url", "endpoint")(lambda value: value if value is None else http_url(value))

    @model_validator(mode="after")
    def _by_type(self) -> ChannelSpec:
        channel = CHANNELS[self.type]
        takes(self, _SETTINGS, channel.fields, channel.optional, f"a {self.type} channel")
        if self.type == "email":
            recipients = [self.to] if isinstance(self.to, str) else list(self.to or [])
            if not 1 <= len(recipients) <= 50:
                raise ValueError("an email channel needs 1 to 50 addresses in `to`")
            self.to = [check_email(address) for address in recipients]
        if self.type == "sms":
            if not isinstance(self.to, str):
                raise ValueError("an sms channel sends to one phone number")
            check_phone(self.to)
        return self

    def settings(self) -> dict[str, Any]:
        keys = self.keys.model_dump() if self.keys else None
        values = {"url": self.url, "secret": self.secret, "to": self.to, "endpoint": self.endpoint, "keys": keys}
        return {name: value for name, value in values.items() if value is not None}


class SubscriberSpec(_Filters):
    email: str | None = Field(None, max_length=320)
    phone: str | None = Field(None, max_length=16)
    webhook: str | None = Field(None, max_length=2048)
    secret: str | None = Field(None, min_length=16, max_length=256)
    push: PushSubscription | None = None

    @model_validator(mode="after")
    def _one_address(self) -> SubscriberSpec:
        given = [name for name in SUBSCRIBER_KINDS if getattr(self, name) is not None]
        if len(given) != 1:
            *others, last = SUBSCRIBER_KINDS
            raise ValueError(f"a subscriber has exactly one of {', '.join(others)} or {last}")
        if self.secret is not None and self.webhook is None:
            raise ValueError("only a webhook subscriber takes a secret")
        for channels_only in (ONCALL_EXHAUSTED, CERTIFICATE_EXPIRING, DOMAIN_EXPIRING):
            if channels_only in self.events:
                raise ValueError(f"{channels_only} is for the organization's channels, not for subscribers")
        if self.email is not None:
            check_email(self.email)
        if self.phone is not None:
            check_phone(self.phone)
        if self.webhook is not None:
            http_url(self.webhook)
        return self

    @property
    def kind(self) -> str:
        """The channel kind that delivers to this subscriber."""
        return next(c.kind for field, c in SUBSCRIBER_KINDS.items() if getattr(self, field) is not None)

    @property
    def address(self) -> str:
        return self.email or self.phone or self.webhook or (self.push.endpoint if self.push else "")

    def settings(self) -> dict[str, Any]:
        if self.push is not None:
            return {"keys": self.push.keys.model_dump()}
        return {"secret": self.secret} if self.secret else {}


class PushSubscription(Strict):
    endpoint: str = Field(max_length=2048)
    keys: PushKeys

    _check_endpoint = field_validator("endpoint")(http_url)


SubscriberSpec.model_rebuild()


def dangling(channels: list[ChannelSpec], subscribers: list[SubscriberSpec], component_keys: set[str]) -> list[str]:
    """Component keys named by a channel or subscriber that the organization does not declare."""
    named = [key for spec in [*channels, *subscribers] for key in spec.components]
    return sorted({key for key in named if key not in component_keys})


def sync(
    organization_id: int,
    channels: list[ChannelSpec],
    subscribers: list[SubscriberSpec],
    component_ids: dict[str, int],
    *,
    prune: bool,
) -> tuple[int, int, list[str]]:
    """Upsert the organization's channels (by key) and subscribers (by kind and address), inside
    the caller's transaction, as the file's (owner ``file``, one more version); with ``prune``,
    delete those not named that the file made. A subscriber whose subscription is gone stays gone.
    Returns (deleted channels, deleted subscribers, the gone subscribers the file still names).

    One made through the API (owner ``api``, `pulse.api`) is the file's again once the file names
    it; one the file does not name is left alone, pruned or not."""
    for channel in channels:
        fields = {**channel_fields(channel, [component_ids[key] for key in channel.components]), "owner": "file"}
        (
            NotificationChannel.insert(organization=organization_id, key=channel.key, **fields)
            .on_conflict(
                conflict_target=[NotificationChannel.organization, NotificationChannel.key],
                update={**fields, "updated_at": utcnow(), "version": NotificationChannel.version + 1},
            )
            .execute()
        )
    for subscriber in subscribers:
        fields = {
            **subscriber_fields(subscriber, [component_ids[key] for key in subscriber.components]),
            "owner": "file",
        }
        (
            Subscriber.insert(organization=organization_id, **fields)
            .on_conflict(
                conflict_target=[Subscriber.organization, Subscriber.kind, Subscriber.address],
                update={**fields, "version": Subscriber.version + 1},
            )
            .execute()
        )
    named = {(s.kind, s.address) for s in subscribers}
    gone = [
        f"{s.kind} {shown(s.kind, s.address)}"
        for s in Subscriber.select(Subscriber.kind, Subscriber.address).where(
            Subscriber.organization == organization_id, Subscriber.gone_at.is_null(False)
        )
        if (s.kind, s.address) in named
    ]
    if not prune:
        return 0, 0, gone
    channels_deleted = (
        NotificationChannel.delete()
        .where(
            NotificationChannel.organization == organization_id,
            NotificationChannel.key.not_in([c.key for c in channels] or [""]),
            NotificationChannel.owner == "file",
        )
        .execute()
    )
    stale = [
        s.id
        for s in Subscriber.select(Subscriber.id, Subscriber.kind, Subscriber.address).where(
            Subscriber.organization == organization_id, Subscriber.owner == "file"
        )
        if (s.kind, s.address) not in named
    ]
    subscribers_deleted = Subscriber.delete().where(Subscriber.id.in_(stale)).execute() if stale else 0
    return channels_deleted, subscribers_deleted, gone


def channel_fields(channel: ChannelSpec, component_ids: list[int]) -> dict[str, Any]:
    """A channel's columns but its key (and owner), ``component_ids`` those its ``components`` name."""
    return {
        "type": channel.type,
        "settings": channel.settings(),
        "events": channel.events,
        "component_ids": component_ids,
        "enabled": channel.enabled,
    }


def subscriber_fields(subscriber: SubscriberSpec, component_ids: list[int]) -> dict[str, Any]:
    """A subscriber's columns but its owner, ``component_ids`` those its ``components`` name."""
    return {
        "kind": subscriber.kind,
        "address": subscriber.address,
        "settings": subscriber.settings(),
        "events": subscriber.events,
        "component_ids": component_ids,
    }


def channel_document(row: NotificationChannel, components: list[str]) -> dict[str, Any]:
    """The channel as a configuration file declares it (what `ChannelSpec` reads back as what is
    stored), secrets included, ``components`` the keys of those it names, so that a change to some
    of its fields (the API's PATCH) is validated whole."""
    found = {"key": row.key, "type": row.type, "enabled": row.enabled, **row.settings}
    return {**found, "events": list(row.events), "components": components}


def subscriber_document(row: Subscriber, components: list[str]) -> dict[str, Any]:
    """The subscriber as a configuration file declares it, secrets included (see `channel_document`)."""
    field = CHANNELS[row.kind].subscriber
    if field == "push":
        found: dict[str, Any] = {"push": {"endpoint": row.address, **row.settings}}
    else:
        found = {str(field): row.address, **row.settings}
    return {**found, "events": list(row.events), "components": components}


def shown(kind: str, address: str) -> str:
    """A subscriber's address as listings show it: a URL by its host and a fingerprint (its path
    may be a secret), as `pulse.notifications.delivery` names destinations."""
    return masked(address) if CHANNELS[kind].address_is_url else address


def masked(url: str) -> str:
    """A URL by its host and the first 8 hex digits of its MD5, to tell two on one host apart."""
    return f"{urlsplit(url).hostname or '?'} #{hashlib.md5(url.encode()).hexdigest()[:8]}"
