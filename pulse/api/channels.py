"""``/api/v1/channels`` and ``/api/v1/channels/{key}``: the token's organization's notification
channels, listed by key a page at a time, filtered by ``type``, and made, replaced, patched and
deleted as the configuration file declares them (`pulse.notifications.spec.ChannelSpec`), by
`pulse.api.resources`.

A channel's ``url``, ``secret``, push ``endpoint`` and ``keys`` are write-only: never answered,
logged nor repeated in a problem. It is shown with its recipients (``to``: an email or sms
channel's, the operator's own) and, for a URL, its ``destination`` as its notifications name it:
the host and the first 8 hex digits of the URL's MD5, to tell two apart; ``signed`` says whether a
webhook has a secret. Its ``components`` are named by key, here and in a body (422 for a key the
organization does not have).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typing_extensions import TypedDict

from pulse.api.resources import OWNER, Filter, Resource
from pulse.api.writes import invalid
from pulse.models import Component, NotificationChannel, Subscriber, utcnow
from pulse.notifications import spec as notifications
from pulse.notifications.channels import CHANNELS as KINDS

SECRETS = ("url", "secret", "endpoint", "keys")


class ChannelView(TypedDict):
    key: str
    type: str
    enabled: bool
    events: list[str]
    components: list[str]
    to: list[str] | str | None  # an email channel's addresses, an sms channel's number
    destination: str | None
    signed: bool


class ChannelPage(TypedDict):
    channels: list[ChannelView]
    next_cursor: str | None


def shown(rows: list[NotificationChannel]) -> list[ChannelView]:
    keys = component_keys(rows)
    return [
        {
            "key": row.key,
            "type": row.type,
            "enabled": row.enabled,
            "events": list(row.events),
            "components": [keys[i] for i in row.component_ids if i in keys],
            "to": row.settings.get("to"),
            "destination": _destination(row.settings),
            "signed": bool(row.settings.get("secret")),
        }
        for row in rows
    ]


def _destination(settings: dict[str, Any]) -> str | None:
    url = settings.get("url") or settings.get("endpoint")
    return notifications.masked(url) if url else None


def component_keys(rows: Sequence[NotificationChannel | Subscriber]) -> dict[int, str]:
    """The keys of the components ``rows`` (channels or subscribers) name, by id, in one query."""
    ids = {i for row in rows for i in row.component_ids}
    if not ids:
        return {}
    return {c.id: c.key for c in Component.select(Component.id, Component.key).where(Component.id.in_(list(ids)))}


def component_ids(organization_id: int, keys: list[str], what: str) -> list[int]:
    """The ids of the organization's components ``keys`` names, in their order; else 422 naming
    each key it does not have, for ``what`` (``channel``)."""
    query = Component.select(Component.id, Component.key)
    found = {c.key: c.id for c in query.where(Component.organization == organization_id, Component.key.in_(keys))}
    problems = [
        f"$.components[{index}]: this organization has no component {key!r}"
        for index, key in enumerate(keys)
        if key not in found
    ]
    if problems:
        raise invalid(what, problems)
    return [found[key] for key in keys]


def components_of(row: NotificationChannel | Subscriber) -> list[str]:
    """The keys of the components a channel or subscriber names, in its order."""
    keys = component_keys([row])
    return [keys[i] for i in row.component_ids if i in keys]


def _write(organization_id: int, spec: notifications.ChannelSpec, current: NotificationChannel | None) -> int:
    fields = notifications.channel_fields(spec, component_ids(organization_id, spec.components, "channel"))
    if current is None:
        return NotificationChannel.insert(organization=organization_id, key=spec.key, owner=OWNER, **fields).execute()
    changes = {**fields, "owner": OWNER, "updated_at": utcnow(), "version": NotificationChannel.version + 1}
    NotificationChannel.update(**changes).where(NotificationChannel.id == current.id).execute()
    return current.id


CHANNELS = Resource(
    name="channel",
    plural="channels",
    model=NotificationChannel,
    identifier="key",
    spec=notifications.ChannelSpec,
    view=ChannelView,
    page=ChannelPage,
    show=shown,
    document=lambda row: notifications.channel_document(row, components_of(row)),
    write=_write,
    existing=lambda organization_id, spec: NotificationChannel.get_or_none(
        NotificationChannel.organization == organization_id, NotificationChannel.key == spec.key
    ),
    filters=(Filter("type", "Only the channels of this type.", allowed=tuple(KINDS), column=NotificationChannel.type),),
    secrets=SECRETS,
    example={
        "key": "audit",
        "type": "webhook",
        "enabled": True,
        "events": ["incident.opened"],
        "components": ["api"],
        "to": None,
        "destination": "hooks.acme.example #5f0e3c2a",
        "signed": True,
    },
    body_example={
        "key": "audit",
        "type": "webhook",
        "url": "https://hooks.acme.example/pulse/T0K3N",
        "secret": "a-secret-of-16-or-more",
        "events": ["incident.opened"],
        "components": ["api"],
    },
    patch_example={"enabled": False},
)
