"""``/api/v1/subscribers`` and ``/api/v1/subscribers/{id}``: the token's organization's
subscribers, listed by id a page at a time, filtered by ``kind``, and made, replaced, patched and
deleted as the configuration file declares them (`pulse.notifications.spec.SubscriberSpec`), by
`pulse.api.resources`.

A subscriber is named by its id: its address, what the file matches it by, may be a secret (a
webhook's URL, a push endpoint). Its ``kind`` is the field of the file that gives its address
(``email``, ``phone``, ``webhook``, ``push``); its ``address`` is shown as notifications name it, a
URL by its host and the first 8 hex digits of its MD5; a webhook's ``secret`` and a push
subscription's keys are write-only (``signed`` says whether a webhook has a secret). A write that
changes its address makes it a destination anew: a subscription that was gone is tried again.
"""

from __future__ import annotations

from typing_extensions import TypedDict

from pulse.api.channels import component_ids, component_keys, components_of
from pulse.api.resources import OWNER, Filter, Resource
from pulse.models import Subscriber
from pulse.notifications import spec as notifications
from pulse.notifications.channels import SUBSCRIBER_KINDS

#: A subscriber's kind as the file and the API name it (its address's field), and as it is stored.
KINDS = {name: channel.kind for name, channel in SUBSCRIBER_KINDS.items()}
NAMES = {kind: name for name, kind in KINDS.items()}


class SubscriberView(TypedDict):
    id: int
    kind: str
    address: str
    events: list[str]
    components: list[str]
    signed: bool
    gone_at: str | None
    created_at: str


class SubscriberPage(TypedDict):
    subscribers: list[SubscriberView]
    next_cursor: str | None


def shown(rows: list[Subscriber]) -> list[SubscriberView]:
    keys = component_keys(rows)
    return [
        {
            "id": row.id,
            "kind": NAMES[row.kind],
            "address": notifications.shown(row.kind, row.address),
            "events": list(row.events),
            "components": [keys[i] for i in row.component_ids if i in keys],
            "signed": bool(row.settings.get("secret")),
            "gone_at": row.gone_at and row.gone_at.isoformat(),
            "created_at": row.created_at.isoformat(),
        }
        for row in rows
    ]


def _write(organization_id: int, spec: notifications.SubscriberSpec, current: Subscriber | None) -> int:
    fields = notifications.subscriber_fields(spec, component_ids(organization_id, spec.components, "subscriber"))
    if current is None:
        return Subscriber.insert(organization=organization_id, owner=OWNER, **fields).execute()
    moved = (current.kind, current.address) != (spec.kind, spec.address)
    changes = {**fields, "owner": OWNER, "version": Subscriber.version + 1, **({"gone_at": None} if moved else {})}
    Subscriber.update(**changes).where(Subscriber.id == current.id).execute()
    return current.id


SUBSCRIBERS = Resource(
    name="subscriber",
    plural="subscribers",
    model=Subscriber,
    identifier="id",
    spec=notifications.SubscriberSpec,
    view=SubscriberView,
    page=SubscriberPage,
    show=shown,
    document=lambda row: notifications.subscriber_document(row, components_of(row)),
    write=_write,
    existing=lambda organization_id, spec: Subscriber.get_or_none(
        Subscriber.organization == organization_id, Subscriber.kind == spec.kind, Subscriber.address == spec.address
    ),
    filters=(
        Filter(
            "kind",
            "Only the subscribers of this kind (the field that gives their address).",
            allowed=tuple(KINDS),
            column=Subscriber.kind,
            stored=KINDS,
        ),
    ),
    secrets=("webhook", "secret", "push"),
    example={
        "id": 31,
        "kind": "email",
        "address": "alice@example.org",
        "events": [],
        "components": ["api"],
        "signed": False,
        "gone_at": None,
        "created_at": "2026-12-07T18:20:11.204000+00:00",
    },
    body_example={"email": "alice@example.org", "components": ["api"]},
    patch_example={"events": ["incident.opened", "incident.resolved"]},
)
