"""Reply codes: an SMS page says "Reply 4821 to acknowledge", and a reply with that code, from the
number the page went to, acknowledges the alert for the person paged.

- `make`: when a level is paged, each of its SMS pages gets a code of `DIGITS` digits, drawn at
  random among those not live for its number, and written on the page's notification (what its
  message says) and in ``oncall_reply_code`` (the alert, the person, the number). A code is live
  until `LIFETIME` after its page, or until its alert is resolved; codes are drawn for one number at
  a time (a lock per number, taken in order), so no two live codes of a number, hence of a person,
  are the same. Pages ask for replies only when `enabled`: when `pulse serve` takes them.
- `parse`: the code a reply's text gives, if it gives one; `keyword`: Twilio's own words.

The replies themselves arrive at `pulse.oncall.smshook`. A code is short because the number binds
it: a reply's code is looked up with the number it came from, so a code sent to someone else is, to
that number, no code at all. Opt-out and help keywords (STOP, START, HELP …) are never a code.
"""

from __future__ import annotations

import logging
import re
import secrets
from datetime import datetime

from pulse.config import Settings
from pulse.db import db
from pulse.models import Notification, OnCallReplyCode
from pulse.oncall import tokens

logger = logging.getLogger(__name__)

DIGITS = 4
LIFETIME = tokens.LIFETIME  # as long as the page's link
# Twilio's default opt-out, opt-in and help keywords: Twilio answers them itself.
KEYWORDS = frozenset(
    {"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "START", "YES", "UNSTOP", "HELP", "INFO"}
)
_CODES = tuple(f"{n:0{DIGITS}d}" for n in range(10**DIGITS))
# "4821", " 4821. ", "ack 4821", "#4821": the code alone, maybe after "ack" or "#".
_REPLY = re.compile(rf"\s*(?:ack\s*)?#?\s*([0-9]{{{DIGITS}}})[\s.!]*", re.IGNORECASE)

_SMS_PAGES = """
    SELECT n.id, n.person_id, p.phone
      FROM notification n JOIN person p ON p.id = n.person_id
     WHERE n.id = ANY(%s) AND n.kind = 'sms' AND p.phone IS NOT NULL
     ORDER BY n.id
"""
_LIVE = """
    SELECT r.phone, r.code
      FROM oncall_reply_code r JOIN oncall_alert a ON a.id = r.alert_id
     WHERE r.phone = ANY(%s) AND r.expires_at > %s AND a.status <> 'resolved'
"""


def enabled(settings: Settings | None) -> bool:
    """Whether replies are taken: `pulse serve` has its public address and the Twilio account."""
    return bool(settings and settings.serve_public_url and settings.twilio_account_sid and settings.twilio_auth_token)


def make(alert_id: int, notification_ids: list[int], now: datetime, settings: Settings | None) -> None:
    """Give each SMS page among ``notification_ids`` (pages of ``alert_id`` just written) its code,
    in the caller's transaction; nothing unless `enabled`."""
    if not enabled(settings) or not notification_ids:
        return
    pages = db.execute_sql(_SMS_PAGES, (notification_ids,)).fetchall()
    if not pages:
        return
    phones = sorted({phone for _, _, phone in pages})
    for phone in phones:  # in order: two pagings of the same people never wait for each other in a circle
        db.execute_sql("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"oncall reply code {phone}",))
    taken: dict[str, set[str]] = {phone: set() for phone in phones}
    for phone, code in db.execute_sql(_LIVE, (phones, now)).fetchall():
        taken[phone].add(code)
    for notification_id, person_id, phone in pages:
        free = [code for code in _CODES if code not in taken[phone]]
        if not free:
            logger.warning("Alert %s: no reply code left for a page by SMS; it asks for none.", alert_id)
            continue
        code = secrets.choice(free)
        taken[phone].add(code)
        OnCallReplyCode.insert(
            notification=notification_id, alert=alert_id, person=person_id, phone=phone, code=code,
            created_at=now, expires_at=now + LIFETIME,
        ).execute()  # fmt: skip
        Notification.update(reply_code=code).where(Notification.id == notification_id).execute()


def parse(text: str) -> str | None:
    """The code a reply's text gives: the digits alone, maybe after "ack" or "#", spaces and a
    full stop around (``4821``, ``ACK 4821.``); None for any other text, a keyword of `KEYWORDS` too."""
    found = _REPLY.fullmatch(text)
    return found[1] if found else None


def keyword(text: str) -> bool:
    """Whether ``text`` is one of Twilio's opt-out, opt-in or help keywords."""
    return text.strip().upper() in KEYWORDS
