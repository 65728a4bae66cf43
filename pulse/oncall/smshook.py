"""Replies to SMS pages, as Twilio's messaging webhook on `pulse serve`: ``POST /sms/twilio``, the
form of Twilio's incoming-message request, answered with TwiML. Served when `pulse.oncall.replies`
is enabled (``PULSE_SERVE_PUBLIC_URL`` and the Twilio account are set).

A request is answered in this order, and nothing is written before the last step:

1. not a form: 415; a body over `MAX_BODY` bytes: 413;
2. no valid ``X-Twilio-Signature`` (`pulse.inbound.twilio`) over ``PULSE_SERVE_PUBLIC_URL`` followed
   by the path and query the request came with, or one made with a Webhooks Rule's key of its own:
   403; another account's ``AccountSid``: 403; no ``From`` or no ``MessageSid``, or a
   ``MessageSid`` over `MAX_SID` characters: 400. A NUL in a field (which PostgreSQL cannot take)
   is read as U+FFFD, once the signature is checked over the fields as they came;
3. an opt-out, opt-in or help keyword (STOP, START, HELP …): ``<Response/>``, no reply (Twilio
   answers those itself); never an acknowledgement;
4. over the sender's rate: `BURST` messages at once, then one a minute per number, in each process:
   429 (an auto-responder answering the answers is stopped there);
5. `take`: past `MAX_MISSES` wrong codes from the number within `MISS_WINDOW`, counted in
   PostgreSQL for every process: 429 until the window ends, whatever the code (the link and ``pulse
   oncall ack`` still work); else the reply acknowledges, or not, and the answer says which, as the
   TwiML ``<Message>``. A wrong code is one sent to no page of the number, counted only while the
   number holds a live code (with none, there is nothing to guess).

`take` acknowledges in the request, in one transaction, where a heartbeat ping is one statement and
leaves the rest to a worker: Twilio waits for the answer, and the answer is what happened
(acknowledged, acknowledged already by someone else, no longer live), which only doing it tells;
and it is as small and bounded as an acknowledgement link's: the number's lock (`replies.lock`,
which makes its wrong codes count one at a time), the code's row locked, the alert's guarded
UPDATE, its pages not sent yet cancelled, a timeline row, the code marked used. Handed to a worker,
the answer would come before the outcome, and the page would go on escalating while RabbitMQ is away.

The auth token and the codes never reach the log: the access line names the route, `take`'s line
the alert and the person. The rate limiter keeps a number's digest, not the number.
"""

from __future__ import annotations

import logging
import math
from datetime import datetime, timedelta
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from pulse.config import Settings
from pulse.db import db
from pulse.inbound import twilio
from pulse.inbound.bounds import RefusedError, read_body
from pulse.inbound.jsonbody import storable
from pulse.inbound.limits import TokenBuckets
from pulse.inbound.tokens import digest
from pulse.models import utcnow
from pulse.models.alert import ACKNOWLEDGED, RESOLVED, TRIGGERED
from pulse.oncall import alerts, replies

logger = logging.getLogger(__name__)

PATH = "/sms/twilio"
MAX_BODY = 64 * 1024  # bytes: a message of 1,600 characters, percent-encoded, and Twilio's other fields
RATE_PER_S = 1 / 60  # messages a number may send per second, after its burst
BURST = 5
VIA = "sms"
MAX_SID = 64  # characters of a MessageSid kept (Twilio's are 34)
MAX_MISSES = 10  # wrong codes a number may reply with within MISS_WINDOW
MISS_WINDOW = timedelta(days=1)
FORM = "application/x-www-form-urlencoded"

# The latest code this number was sent (a code stops being live, never starts again, so a live one
# is the latest), while its person still has the number; locked: two replies with it take turns.
_FIND = """
    SELECT r.id, r.alert_id, p.key, r.used_at, r.message_sid, r.answer, a.status, a.acknowledged_by,
           a.acknowledged_at
      FROM oncall_reply_code r
      JOIN person p ON p.id = r.person_id AND p.phone = r.phone
      JOIN oncall_alert a ON a.id = r.alert_id
     WHERE r.phone = %s AND r.code = %s
     ORDER BY r.id DESC
     LIMIT 1
       FOR UPDATE OF r
"""
_MISSES = "SELECT misses, since FROM oncall_reply_miss WHERE phone = %s AND since > %s"
# A wrong code of a number holding a live code: counted from 1 again once its day is over.
_MISSED = """
    INSERT INTO oncall_reply_miss AS m (phone, since, misses)
    SELECT %(phone)s::varchar, %(now)s, 1
     WHERE EXISTS (SELECT 1 FROM oncall_reply_code r JOIN oncall_alert a ON a.id = r.alert_id
                    WHERE r.phone = %(phone)s AND a.status = 'triggered')
        ON CONFLICT (phone) DO UPDATE
       SET since = CASE WHEN m.since > %(start)s THEN m.since ELSE %(now)s END,
           misses = CASE WHEN m.since > %(start)s THEN m.misses + 1 ELSE 1 END
"""


def routes(settings: Settings) -> list[BaseRoute]:
    """The webhook's route, or none when replies are not enabled."""
    if not replies.enabled(settings):
        return []
    buckets = TokenBuckets(rate_per_s=RATE_PER_S, burst=BURST)

    async def endpoint(request: Request) -> Response:
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != FORM:
            raise RefusedError(415, "not a form")
        form = parse_qs((await read_body(request, MAX_BODY)).decode("utf-8", "replace"), keep_blank_values=True)
        if twilio.RULE_HEADER in request.headers:
            raise RefusedError(403, "signed with a Webhooks Rule's own key, which Pulse does not check")
        given = request.headers.get(twilio.HEADER, "")
        if not twilio.valid(settings.twilio_auth_token, signed_url(settings, request.scope), form, given):
            raise RefusedError(403, "no valid X-Twilio-Signature")
        if _one(form, "AccountSid") != settings.twilio_account_sid:
            raise RefusedError(403, "a message to another Twilio account")
        sender, text, message_sid = (storable(_one(form, name))[0] for name in ("From", "Body", "MessageSid"))
        if not (sender and message_sid):
            raise RefusedError(400, "no From or no MessageSid")
        if len(message_sid) > MAX_SID:
            raise RefusedError(400, f"a MessageSid over {MAX_SID} characters")
        if replies.keyword(text):
            return twilio.twiml(None)
        wait = buckets.take(digest(sender))
        if wait:
            raise RefusedError(429, "over the sender's rate", headers={"Retry-After": str(math.ceil(wait))})
        return twilio.twiml(await run_in_threadpool(_take, sender, text, message_sid, utcnow()))

    return [Route(PATH, endpoint, methods=["POST"])]


def signed_url(settings: Settings, scope: Scope) -> str:
    """The URL Twilio signed: the public address, then the path and query as the request gave them."""
    path = scope.get("raw_path") or scope["path"].encode()
    query = scope.get("query_string", b"")
    return settings.serve_public_url + path.decode("latin-1") + (f"?{query.decode('latin-1')}" if query else "")


def take(phone: str, text: str, message_sid: str, now: datetime) -> str:
    """Take the reply ``text`` from ``phone``, Twilio's message ``message_sid``, received at ``now``
    (no keyword: see `pulse.oncall.replies.keyword`); returns the answer, in words. Commits.

    A live, unused code sent to ``phone`` acknowledges its alert for the person paged and is used;
    the same message again is answered as it was. Anything else changes nothing and says why; a
    wrong code counts against the number. Raises `RefusedError` (429) past `MAX_MISSES` of them."""
    code = replies.parse(text)
    if code is None:
        return f"To acknowledge a page, reply with its {replies.DIGITS}-digit code alone."
    with db.atomic():
        replies.lock(phone)
        over = db.execute_sql(_MISSES, (phone, now - MISS_WINDOW)).fetchone()
        if over is not None and over[0] >= MAX_MISSES:
            retry = math.ceil((over[1] + MISS_WINDOW - now).total_seconds())
            reason = f"over the number's wrong codes ({MAX_MISSES} a day, counted by every process)"
            raise RefusedError(429, reason, headers={"Retry-After": str(retry)})
        row = db.execute_sql(_FIND, (phone, code)).fetchone()
        if row is None:  # never sent to this number (maybe to another), or its person no longer has it
            db.execute_sql(_MISSED, {"phone": phone, "now": now, "start": now - MISS_WINDOW})
            return f"No page sent to this number has the code {code}: nothing was acknowledged."
        code_id, alert_id, person, used_at, used_by, answer, status, acknowledged_by, acknowledged_at = row
        if used_at is not None:
            if used_by == message_sid:
                return str(answer)  # Twilio sent the same message again
            return f"The code {code} was used already: alert {alert_id} is {status}."
        if status == RESOLVED:
            return f"Alert {alert_id} is resolved already: nothing to acknowledge."
        if status == ACKNOWLEDGED:
            who = acknowledged_by or "an operator"
            return f"Alert {alert_id} was acknowledged already, by {who} at {acknowledged_at:%Y-%m-%d %H:%M} UTC."
        if status != TRIGGERED:
            return (
                f"Alert {alert_id} is no longer escalating, so its code no longer works: acknowledge it with "
                "the link or pulse oncall ack."
            )
        _, said = alerts.acknowledge(alert_id, person, VIA, now)
        answer = f"{said[0].upper()}{said[1:]}."
        db.execute_sql(
            "UPDATE oncall_reply_code SET used_at = %s, message_sid = %s, answer = %s WHERE id = %s",
            (now, message_sid, answer, code_id),
        )
    logger.info("Alert %s: SMS reply of %s: %s.", alert_id, person, said)
    return answer


def _take(phone: str, text: str, message_sid: str, now: datetime) -> str:
    with db.connection_context():
        return take(phone, text, message_sid, now)


def _one(form: dict[str, list[str]], name: str) -> str:
    return (form.get(name) or [""])[0]
