"""SMS through Twilio: one compact line within Twilio's 1,600 characters.

Twilio's documentation: "Create a Message resource"
(https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource).

"[Acme] Public API: Major outage since 2026-12-01 14:03 UTC. <summary> <url>": the summary is cut
first, and the link is kept whole at the end (or left out when it cannot fit).
"""

from __future__ import annotations

import base64
from urllib.parse import quote, urlencode

from pulse.config import Settings
from pulse.net import AddressPolicy, Response
from pulse.notifications.channels.notice import Notice
from pulse.notifications.channels.text import filled, headline, link, shorten, status_name, when
from pulse.notifications.channels.transport import Channel, Destination, Sent, TransportError, field, json_field, post

MAX = 1600
ORGANIZATION_MAX = 50
NAME_MAX = 100  # the component's name
WHAT_MAX = 200  # "<component>: <status>", or the title


def text(notice: Notice) -> str:
    """The message body."""
    if notice.component and notice.status:
        what = f"{shorten(filled(notice.component), NAME_MAX)}: {status_name(notice.status)}"
    else:
        what = headline(notice)
    organization = shorten(filled(notice.organization), ORGANIZATION_MAX)
    head = f"[{organization}] {shorten(what, WHAT_MAX, one_line=True)} since {when(notice.since)}."
    url = link(notice)
    if url and len(head) + 1 + len(url) > MAX:
        url = None
    room = MAX - len(head) - (len(url) + 1 if url else 0) - 1
    summary = shorten(notice.summary, room, one_line=True)
    return " ".join(part for part in (head, summary, url) if part)


# --- sending -----------------------------------------------------------------------------------

TRUSTED = AddressPolicy(allow_private=True, allow_link_local=True)  # the operator's own settings


def deliver(notice: Notice, destination: Destination, settings: Settings, policy: AddressPolicy) -> Sent:
    """Create a Twilio Message (form-encoded, basic auth); Twilio's answer carries its ``sid``."""
    sid, token = settings.twilio_account_sid, settings.twilio_auth_token
    if not (sid and token and settings.twilio_from):
        raise TransportError(
            "SMS is not configured: set PULSE_TWILIO_ACCOUNT_SID, PULSE_TWILIO_AUTH_TOKEN and PULSE_TWILIO_FROM",
            permanent=True,
        )
    auth = base64.b64encode(f"{sid}:{token}".encode()).decode()
    return post(
        f"{settings.twilio_url.rstrip('/')}/2010-04-01/Accounts/{quote(sid, safe='')}/Messages.json",
        urlencode({"To": destination.settings["to"], "From": settings.twilio_from, "Body": text(notice)}),
        {"Content-Type": "application/x-www-form-urlencoded", "Authorization": f"Basic {auth}"},
        TRUSTED,
        vendor="Twilio",
        timeout_s=settings.notify_timeout_s,
        reason=_reason,
        reference=field("sid"),
    )


def _reason(response: Response) -> str:
    message, code = json_field("message")(response), json_field("code")(response)
    return f"{message} (code {code})" if code.isdigit() else message


CHANNEL = Channel(kind="sms", label="SMS", deliver=deliver, fields=("to",), subscriber="phone", address="to")
