"""Slack incoming webhook: a Block Kit message.

Slack's documentation: "Sending messages using incoming webhooks"
(https://api.slack.com/messaging/webhooks) and the Block Kit reference (https://api.slack.com/block-kit).

Every user-supplied text is escaped as Slack asks (&, <, >), so a name can neither mention
``<!channel>`` nor forge a link; limits are checked on the escaped text.
"""

from __future__ import annotations

import json
from typing import Any

from pulse.config import Settings
from pulse.net import AddressPolicy
from pulse.notifications.channels.notice import Notice
from pulse.notifications.channels.text import change, filled, fit, headline, link, shorten, when
from pulse.notifications.channels.transport import JSON, Channel, Destination, Sent, post

HEADER_MAX = 150  # header block, plain_text
TEXT_MAX = 3000  # section and context texts, and the fallback `text`
ORGANIZATION_MAX = 60  # in the fallback text, so the headline shows on a phone
CONTEXT_MAX = 300  # each context element: a name, not an essay


def escape(text: str) -> str:
    """``text`` safe for Slack text objects: only &, < and > are special."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def payload(notice: Notice) -> dict[str, Any]:
    """The JSON body for an incoming webhook."""
    since = when(notice.since)
    status = change(notice)
    details = ([f"*Status:* {fit(status, 200, escape=escape)}"] if status else []) + [f"*Since:* {since}"]
    tail = "\n".join(details)
    summary = fit(notice.summary.strip(), TEXT_MAX - len(tail) - 2, escape=escape)
    context = [filled(notice.organization)] + ([filled(notice.component)] if notice.component else [])
    organization = shorten(filled(notice.organization), ORGANIZATION_MAX)
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": fit(headline(notice), HEADER_MAX, escape=escape)}},
        {"type": "section", "text": {"type": "mrkdwn", "text": f"{summary}\n\n{tail}" if summary else tail}},
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": fit(c, CONTEXT_MAX, escape=escape)} for c in context],
        },
    ]
    url = link(notice)
    if url:
        button = {"type": "button", "text": {"type": "plain_text", "text": "View"}, "url": url}
        blocks.append({"type": "actions", "elements": [button]})
    ending = f" since {since}"
    fallback = fit(f"[{organization}] {headline(notice)}", TEXT_MAX - len(ending), escape=escape) + ending
    return {"text": fallback, "blocks": blocks}


# --- sending -----------------------------------------------------------------------------------


def deliver(notice: Notice, destination: Destination, settings: Settings, policy: AddressPolicy) -> Sent:
    """POST to the incoming webhook; Slack answers ``ok`` or a bare error string."""
    url = destination.settings["url"]
    return post(url, json.dumps(payload(notice)), JSON, policy, vendor="Slack", timeout_s=settings.notify_timeout_s)


# 1 message a second per webhook, and 10 % to spare.
CHANNEL = Channel(kind="slack", label="Slack", deliver=deliver, fields=("url",), pace=1.1)
