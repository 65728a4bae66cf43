"""Notification channels: one module per channel, a pure payload builder first, then `deliver`,
which sends it through `pulse.channels.transport` and returns `Sent` or raises `TransportError`."""

from collections.abc import Callable

from pulse.channels import discord, email, push, slack, sms, teams, webhook
from pulse.channels.notice import Notice
from pulse.channels.transport import Destination, Sent, TransportError
from pulse.config import Settings
from pulse.http import AddressPolicy

Transport = Callable[[Notice, Destination, Settings, AddressPolicy], Sent]

#: The transport of each channel type (and subscriber kind).
TRANSPORTS: dict[str, Transport] = {
    "email": email.deliver,
    "sms": sms.deliver,
    "slack": slack.deliver,
    "discord": discord.deliver,
    "teams": teams.deliver,
    "webhook": webhook.deliver,
    "push": push.deliver,
}

__all__ = ["TRANSPORTS", "Destination", "Notice", "Sent", "Transport", "TransportError"]
