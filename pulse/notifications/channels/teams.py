"""Microsoft Teams (Workflows or legacy webhook): an Adaptive Card.

Microsoft's documentation: "Create incoming webhooks with Workflows for Microsoft Teams"
(https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook)
and the Adaptive Cards schema (https://adaptivecards.io/explorer/).

Teams refuses messages over 28 KB, so the body, as `json.dumps` writes it, stays within
`MAX_BYTES` whatever the input: the summary gets whatever room the rest leaves.
"""

from __future__ import annotations

import json
from typing import Any

from pulse.config import Settings
from pulse.net import AddressPolicy
from pulse.notifications.channels.notice import CRITICAL, INFO, RESOLVED, WARNING, Notice
from pulse.notifications.channels.text import change, filled, fit, headline, json_length, link, shorten, when
from pulse.notifications.channels.transport import JSON, Channel, Destination, Sent, post

MAX_BYTES = 27 * 1024
TITLE_MAX = 256  # characters, then at most TEXT_BYTES in JSON
VALUE_MAX = 256  # a fact's value, likewise
TEXT_BYTES = 2000
COLORS = {CRITICAL: "Attention", WARNING: "Warning", RESOLVED: "Good", INFO: "Accent"}


def _short(text: str, limit: int) -> str:
    return fit(shorten(text, limit, one_line=True), TEXT_BYTES, measure=json_length)


def payload(notice: Notice) -> dict[str, Any]:
    """The JSON body: a message with one Adaptive Card attachment."""
    status = change(notice)
    facts = ([{"title": "Status", "value": _short(status, VALUE_MAX)}] if status else []) + [
        {"title": "Since", "value": when(notice.since)},
        {"title": "Organization", "value": _short(filled(notice.organization), VALUE_MAX)},
    ]
    title = {
        "type": "TextBlock",
        "text": _short(headline(notice), TITLE_MAX),
        "weight": "Bolder",
        "size": "Medium",
        "wrap": True,
        "color": COLORS.get(notice.severity, COLORS[INFO]),
    }
    summary = {"type": "TextBlock", "text": "", "wrap": True}
    card: dict[str, Any] = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": [title, summary, {"type": "FactSet", "facts": facts}],
    }
    url = link(notice)
    if url:
        card["actions"] = [{"type": "Action.OpenUrl", "title": "View", "url": url}]
    attachment = {"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": None, "content": card}
    body = {"type": "message", "attachments": [attachment]}
    summary["text"] = fit(notice.summary.strip(), MAX_BYTES - len(json.dumps(body)), measure=json_length)
    if not summary["text"]:
        card["body"].remove(summary)
    return body


# --- sending -----------------------------------------------------------------------------------


def deliver(notice: Notice, destination: Destination, settings: Settings, policy: AddressPolicy) -> Sent:
    """POST the card to the Workflows (or legacy) webhook URL; 202 (or 200) means accepted."""
    url = destination.settings["url"]
    return post(url, json.dumps(payload(notice)), JSON, policy, vendor="Teams", timeout_s=settings.notify_timeout_s)


# 4 messages a second per webhook, and 10 % to spare.
CHANNEL = Channel(kind="teams", label="Teams", deliver=deliver, fields=("url",), pace=0.275)
