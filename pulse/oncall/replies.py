"""Reply codes: an SMS page says "Reply 482193 to acknowledge", and a reply with that code, from
the number the page went to, acknowledges the alert for the person paged.

- `make`: when a level is paged, each of its SMS pages gets a code of `DIGITS` digits, drawn at
  random among those not live for its number, and written on the page's notification (what its
  message says) and in ``oncall_reply_code`` (the alert, the person, the number). A code is live
  while its alert escalates: until it is acknowledged, resolved or exhausted, however long that
  takes. Codes are drawn for one number at a time (a lock per number, taken in order: `lock`), so
  no two live codes of a number, hence of a person, are the same. Pages ask for replies only when
  `enabled`: when `pulse serve` takes them.
- `parse`: the code a reply's text gives, if it gives one; `keyword`: Twilio's own words.

The replies themselves arrive at `pulse.oncall.smshook`, which counts a number's wrong codes in
PostgreSQL, for every process at once. The number binds a code: a reply's code is looked up with the
number it came from, so a code sent to someone else is, to that number, no code at all, and only
someone who can send from the paged number can guess. Six digits, a million codes, against at most
`smshook.MAX_MISSES` wrong ones a day: one chance in 100,000 a day for each live code of the number.
Opt-out and help keywords (STOP, START, HELP …) are never a code.
"""

from __future__ import annotations

import logging
import re
import secrets
from datetime import datetime

from pulse.config import Settings
from pulse.db import db
from pulse.models import Notification, OnCallReplyCode

logger = logging.getLogger(__name__)

DIGITS = 6
DRAWS = 100  # codes drawn for a page before it asks for none: its number holds that many live ones
# Twilio's default opt-out, opt-in and help keywords: Twilio answers them itself.
KEYWORDS = frozenset(
    {"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "START", "YES", "UNSTOP", "HELP", "INFO"}
)
# "482193", " 482193. ", "ack 482193", "#482193": the code alone, maybe after "ack" or "#".
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
     WHERE r.phone = ANY(%s) AND a.status = 'triggered'
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
        lock(phone)
    taken: dict[str, set[str]] = {phone: set() for phone in phones}
    for phone, code in db.execute_sql(_LIVE, (phones,)).fetchall():
        taken[phone].add(code)
    for notification_id, person_id, phone in pages:
        code = next((code for code in (draw() for _ in range(DRAWS)) if code not in taken[phone]), None)
        if code is None:
            logger.warning("Alert %s: no reply code left for a page by SMS; it asks for none.", alert_id)
            continue
        taken[phone].add(code)
        OnCallReplyCode.insert(
            notification=notification_id, alert=alert_id, person=person_id, phone=phone, code=code, created_at=now
        ).execute()
        Notification.update(reply_code=code).where(Notification.id == notification_id).execute()


def lock(phone: str) -> None:
    """Take the number's lock until the transaction ends: its codes are drawn, and its replies
    taken, one at a time."""
    db.execute_sql("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"oncall reply code {phone}",))


def draw() -> str:
    """A code of `DIGITS` digits, at random."""
    return f"{secrets.randbelow(10**DIGITS):0{DIGITS}d}"


def parse(text: str) -> str | None:
    """The code a reply's text gives: the digits alone, maybe after "ack" or "#", spaces and a
    full stop around (``482193``, ``ACK 482193.``); None for any other text, a keyword of `KEYWORDS` too."""
    found = _REPLY.fullmatch(text)
    return found[1] if found else None


def keyword(text: str) -> bool:
    """Whether ``text`` is one of Twilio's opt-out, opt-in or help keywords."""
    return text.strip().upper() in KEYWORDS
