"""Discord webhook: one embed.

Discord's documentation: "Execute Webhook" (https://discord.com/developers/docs/resources/webhook#execute-webhook),
the embed limits (https://discord.com/developers/docs/resources/message#embed-object-embed-limits) and "Rate
Limits" (https://discord.com/developers/docs/topics/rate-limits).

Mentions never ping (``allowed_mentions`` parses none) and user-supplied text has its markdown
escaped, so a name can neither format the card nor hide a link.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pulse.config import Settings
from pulse.net import AddressPolicy, Response
from pulse.notifications.channels.notice import INFO, Notice
from pulse.notifications.channels.text import COLORS, change, filled, fit, headline, iso, link, when
from pulse.notifications.channels.transport import JSON, Channel, Destination, Sent, json_field, post

TITLE_MAX = 256
DESCRIPTION_MAX = 4096
FIELD_MAX = 1024  # a field's value
TOTAL_MAX = 6000  # title, description, field names and values, footer: all together
FOOTER = "Pulse"

_MARKDOWN = re.compile(r"([\\*_~`|<>\[\]#-])")


def escape(text: str) -> str:
    """``text`` with Discord's markdown characters backslash-escaped (Discord hides the backslashes)."""
    return _MARKDOWN.sub(r"\\\1", text)


def payload(notice: Notice) -> dict[str, Any]:
    """The JSON body for a webhook execution."""
    status = change(notice)
    fields: list[dict[str, Any]] = (
        [{"name": "Status", "value": fit(status, FIELD_MAX, escape=escape), "inline": True}] if status else []
    )
    fields += [
        {"name": "Since", "value": when(notice.since), "inline": True},
        {"name": "Organization", "value": fit(filled(notice.organization), FIELD_MAX, escape=escape), "inline": True},
    ]
    title = fit(headline(notice), TITLE_MAX, escape=escape)
    used = len(title) + len(FOOTER) + sum(len(f["name"]) + len(f["value"]) for f in fields)
    description = fit(notice.summary.strip(), min(DESCRIPTION_MAX, TOTAL_MAX - used), escape=escape)
    embed: dict[str, Any] = {"title": title}
    if description:
        embed["description"] = description
    url = link(notice)
    if url:
        embed["url"] = url
    embed |= {
        "color": COLORS.get(notice.severity, COLORS[INFO]),
        "timestamp": iso(notice.since),
        "fields": fields,
        "footer": {"text": FOOTER},
    }
    return {"embeds": [embed], "allowed_mentions": {"parse": []}}


# --- sending -----------------------------------------------------------------------------------


def deliver(notice: Notice, destination: Destination, settings: Settings, policy: AddressPolicy) -> Sent:
    """POST to the webhook; when its rate-limit bucket is empty, ask for a pause until it refills."""
    body = json.dumps(payload(notice))
    return post(
        destination.settings["url"],
        body,
        JSON,
        policy,
        vendor="Discord",
        timeout_s=settings.notify_timeout_s,
        reason=_reason,
        pause=_pause,
    )


def _pause(response: Response) -> float:
    """When the webhook's bucket is empty, the seconds until it refills (`post` bounds them)."""
    if response.headers.get("x-ratelimit-remaining") != "0":
        return 0.0
    try:
        return float(response.headers.get("x-ratelimit-reset-after", "0"))
    except ValueError:
        return 1.0


def _reason(response: Response) -> str:
    message, code = json_field("message")(response), json_field("code")(response)
    return f"{message} (code {code})" if code.isdigit() else message


# 5 messages every 2 s per webhook, and 10 % to spare.
CHANNEL = Channel(kind="discord", label="Discord", deliver=deliver, fields=("url",), pace=0.44)
