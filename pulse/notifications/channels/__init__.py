"""Notification channels: one module per kind, a pure payload builder first, then `deliver`, which
sends it through `pulse.notifications.channels.transport` and returns `Sent` or raises
`TransportError`. Each module ends with its `Channel` entry; `CHANNELS` is the one list of kinds.

A new kind is a module with its `Channel` entry, added to `CHANNELS`, and a migration widening the
database's CHECK on ``notification_channel.type`` (and on ``subscriber.kind`` if subscribers use it).
"""

from pulse.notifications.channels import discord, email, push, slack, sms, teams, webhook
from pulse.notifications.channels.notice import Notice
from pulse.notifications.channels.transport import Channel, Destination, Sent, TransportError

#: Every kind of channel, by kind: what the configuration file offers, how each is paced and sent.
CHANNELS: dict[str, Channel] = {
    module.CHANNEL.kind: module.CHANNEL for module in (email, sms, slack, discord, teams, webhook, push)
}

#: The kinds a subscriber can be, by the subscriber field that names its address.
SUBSCRIBER_KINDS: dict[str, Channel] = {c.subscriber: c for c in CHANNELS.values() if c.subscriber is not None}

__all__ = ["CHANNELS", "SUBSCRIBER_KINDS", "Channel", "Destination", "Notice", "Sent", "TransportError"]
