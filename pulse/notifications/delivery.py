"""Notifications: an event fanned out to one row per destination, each row delivered once.

`broadcast` creates the rows in one statement (unique per event and destination, so running it
twice creates them once) and returns the ids to send; whom it tells is the event's ``audience``.
Rows for named people are written by the domain that addresses them (on-call's pages), with the
link and the reply code their message carries; delivery renders what the row and its event carry.
`deliver` claims one row with a guarded update (pending → sending, or a redelivery of the very
message that claimed it, whose worker died), paces it against its destination's limit shared by
every worker process, calls the channel's transport and records the outcome on the row. `send` is
one attempt of the `send` actor: `deliver`, and a delayed message to itself when the destination
asks to wait.

`deliver_many` does the same for a batch of a large broadcast's rows (the `send_many` actor): one
statement claims them all under the same guard, each is delivered in turn, and those sent are
recorded in one statement. What does not go as planned for one of them (a failure, a wait its
destination asks for) is that one's alone, recorded on its row as `deliver` records it, and
handed back to the caller to send on its own; the others are not touched.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from typing import Any

import dramatiq
import peewee

from pulse.config import Settings
from pulse.db import db
from pulse.errors import PermanentError, TransientError
from pulse.middleware.retries import last_attempt
from pulse.models import Notification, NotificationChannel, Subscriber, utcnow
from pulse.models.event import ADDRESSED, EVERYONE
from pulse.models.notification import FAILED
from pulse.models.oncall import CONTACTS
from pulse.net import AddressPolicy
from pulse.notifications.channels import CHANNELS, Destination, Notice, Sent, TransportError
from pulse.notifications.channels.notice import INFO
from pulse.notifications.render import render
from pulse.rabbitmq import PRIORITY_ROUTINE

logger = logging.getLogger(__name__)

MAX_SLEEP_S = 1.5  # a shorter wait for a reserved sending time is slept; a longer one is a delayed message

# How a notification names its destination, without secrets: a URL by its host, and the first 8
# hex digits of its MD5 to tell two subscribers on one host (two browsers on one push service) apart.
_URL_KINDS = ", ".join(f"'{c.kind}'" for c in CHANNELS.values() if c.address_is_url)
_DESTINATION = f"""
    CASE WHEN {{kind}} IN ({_URL_KINDS})
         THEN {{kind}} || ' ' || coalesce(substring({{address}} from '^[a-zA-Z]+://(?:[^@/]*@)?([^/:?#]+)'), '?')
              || ' #' || left(md5({{address}}), 8)
         ELSE {{kind}} || ' ' || {{address}} END
"""
BROADCAST = f"""
    INSERT INTO notification (event_id, organization_id, channel_id, subscriber_id, key, kind, destination)
    SELECT e.id, e.organization_id, c.id, NULL, 'c' || c.id, c.type, c.type || ' channel ' || c.key
      FROM event e JOIN notification_channel c ON c.organization_id = e.organization_id
     WHERE e.id = %(event)s AND c.enabled AND e.audience <> '{ADDRESSED}'
       AND (cardinality(c.events) = 0 OR e.type = ANY (c.events))
       AND (cardinality(c.component_ids) = 0 OR e.component_id = ANY (c.component_ids))
    UNION ALL
    SELECT e.id, e.organization_id, NULL, s.id, 's' || s.id, s.kind,
           {_DESTINATION.format(kind="s.kind", address="s.address")}
      FROM event e JOIN subscriber s ON s.organization_id = e.organization_id
     WHERE e.id = %(event)s AND s.gone_at IS NULL AND e.audience = '{EVERYONE}'
       AND (cardinality(s.events) = 0 OR e.type = ANY (s.events))
       AND (cardinality(s.component_ids) = 0 OR e.component_id = ANY (s.component_ids))
    ON CONFLICT (event_id, key) DO NOTHING
"""
PENDING_IDS = "SELECT id FROM notification WHERE event_id = %s AND status = 'pending' ORDER BY id"
# A person's address for a notification addressed to them: the field of `CONTACTS` for its kind, as JSON.
_PERSON_ADDRESS = " ".join(f"WHEN '{kind}' THEN to_jsonb(p.{field})" for kind, field in CONTACTS.items())
_CLAIM = f"""
    WITH claimed AS (
        UPDATE notification
           SET status = 'sending', claimed_by = %(by)s, claimed_at = now(), attempts = attempts + 1
         WHERE {{rows}} AND (status = 'pending' OR (status = 'sending' AND claimed_by = %(by)s))
     RETURNING id, event_id, organization_id, channel_id, subscriber_id, person_id, kind, link, reply_code
    )
    SELECT n.id, n.kind, n.channel_id, n.subscriber_id, e.id, e.type, e.payload, e.created_at, o.name,
           c.settings, s.address, s.settings, n.person_id,
           CASE n.kind {_PERSON_ADDRESS} END, n.link, n.reply_code
      FROM claimed n
      JOIN event e ON e.id = n.event_id
      JOIN organization o ON o.id = n.organization_id
      LEFT JOIN notification_channel c ON c.id = n.channel_id
      LEFT JOIN subscriber s ON s.id = n.subscriber_id
      LEFT JOIN person p ON p.id = n.person_id
"""
CLAIM = _CLAIM.format(rows="id = %(id)s")
CLAIM_MANY = _CLAIM.format(rows="id = ANY (%(ids)s)") + " ORDER BY n.id"
# The sent ones of a batch (or the one of `deliver`): their outcome, in one statement.
SENT_MANY = """
    UPDATE notification n
       SET status = 'sent', last_error = NULL, reference = nullif(d.reference, ''), duration_ms = d.duration_ms,
           sent_at = now()
      FROM unnest(%(ids)s::bigint[], %(references)s::text[], %(durations)s::int[]) AS d (id, reference, duration_ms)
     WHERE n.id = d.id
"""
# Those of a batch not attempted (its time ran out): pending again, for the batch sent after it.
RELEASE_MANY = """
    UPDATE notification SET status = 'pending', claimed_by = NULL, attempts = attempts - 1
     WHERE id = ANY (%(ids)s) AND status = 'sending' AND claimed_by = %(by)s
"""
RESERVE = """
    INSERT INTO send_pace AS p (key, next_at) VALUES (%(key)s, clock_timestamp() + make_interval(secs => %(every)s))
    ON CONFLICT (key) DO UPDATE SET next_at = greatest(p.next_at, clock_timestamp()) + make_interval(secs => %(every)s)
    RETURNING extract(epoch FROM p.next_at - clock_timestamp()) - %(every)s
"""
HOLD = """
    INSERT INTO send_pace AS p (key, next_at) VALUES (%(key)s, clock_timestamp() + make_interval(secs => %(wait)s))
    ON CONFLICT (key) DO UPDATE SET next_at = greatest(p.next_at, clock_timestamp() + make_interval(secs => %(wait)s))
"""


def broadcast(event_id: int) -> list[int]:
    """Create the event's notifications (once) and return the ids of those still to send."""
    with db.atomic():
        db.execute_sql(BROADCAST, {"event": event_id})
        return [row[0] for row in db.execute_sql(PENDING_IDS, (event_id,))]


@dataclasses.dataclass(frozen=True)
class Claim:
    """A notification this worker holds, with what it takes to deliver it."""

    id: int
    kind: str
    channel_id: int | None
    subscriber_id: int | None
    notice: Notice
    destination: Destination | None  # None when the channel, subscriber or person was deleted


@dataclasses.dataclass(frozen=True)
class Defer:
    """Send again later: `at` is the reserved sending time (epoch seconds) or the end of a provider's wait."""

    at: float


@dataclasses.dataclass(frozen=True)
class Delivered:
    """A notification the provider accepted, not yet recorded."""

    id: int
    reference: str
    duration_ms: int


def deliver(notification_id: int, claim_id: str, settings: Settings, *, at: float | None, final: bool) -> Defer | None:
    """Deliver one notification, once.

    Parameters:
      claim_id: the id of the message doing it; its redelivery may take the claim over.
      at: a sending time reserved earlier (epoch seconds): the pacing wait is already served.
      final: this is the last attempt: a transient failure fails the notification.

    Returns a `Defer` when the destination's pace or the provider asks to wait (the notification
    is pending again, the attempt not counted), None when done (sent, failed for good, or not
    this message's to deliver). Raises `PermanentError` or `TransientError` on a failed attempt,
    `PermanentError` for an id that does not exist.
    """
    claim = _claim(notification_id, claim_id, settings)
    if claim is None:
        return None
    outcome = _attempt(claim, settings, at=at, final=final)
    if isinstance(outcome, Delivered):
        _record_sent([outcome])
        return None
    return outcome


@dataclasses.dataclass
class Batch:
    """What `deliver_many` left to its caller: each of these is to be sent on its own.

    Parameters:
      failed: (id, the attempt's error) of those whose attempt failed; recorded on the row as
        `deliver` records it (pending for a retry, or failed for good on a permanent error).
      deferred: (id, `Defer`) of those whose destination asks to wait (pending again, not counted).
      left: the ids not attempted before the batch's time ran out (pending again, not counted).
    """

    failed: list[tuple[int, Exception]] = dataclasses.field(default_factory=list)
    deferred: list[tuple[int, Defer]] = dataclasses.field(default_factory=list)
    left: list[int] = dataclasses.field(default_factory=list)


def deliver_many(
    notification_ids: list[int], claim_id: str, settings: Settings, *, final: bool, budget_s: float
) -> Batch:
    """Deliver a batch of notifications, each once: claimed in one statement (those that are not
    pending, or this message's own after its worker died, are not this batch's), attempted one
    after the other, those sent recorded in one statement, even when the batch is interrupted (a
    killed worker's are sent again by its redelivery: so only those of a `Channel.deduplicated`
    kind wait for that statement; any other is recorded as soon as it is sent).

    Parameters:
      claim_id: the id of the message doing it; its redelivery may take the claims over.
      final: this attempt is each notification's last: a transient failure fails it.
      budget_s: seconds after which no further notification is attempted (the rest are `Batch.left`).
    """
    claims = _claim_many(notification_ids, claim_id, settings)
    batch, sent = Batch(), []
    started = time.monotonic()
    try:
        for index, claim in enumerate(claims):
            if time.monotonic() - started > budget_s:
                batch.left = [c.id for c in claims[index:]]
                db.execute_sql(RELEASE_MANY, {"ids": batch.left, "by": claim_id})
                break
            try:
                outcome = _attempt(claim, settings, at=None, final=final)
            except (peewee.OperationalError, peewee.InterfaceError):
                raise  # the database is away: the whole batch is retried (its claims are its own)
            except Exception as e:  # noqa: BLE001 - recorded on its row by `_attempt`; the caller retries it alone
                batch.failed.append((claim.id, e))
                continue
            if isinstance(outcome, Delivered) and CHANNELS[claim.kind].deduplicated:
                sent.append(outcome)
            elif isinstance(outcome, Delivered):  # a repeat would reach a person: recorded at once
                _record_sent([outcome])
            elif isinstance(outcome, Defer):
                batch.deferred.append((claim.id, outcome))
    finally:
        _record_sent(sent)
    return batch


def _attempt(claim: Claim, settings: Settings, *, at: float | None, final: bool) -> Delivered | Defer | None:
    """One attempt of a claimed notification (see `deliver`): `Delivered` for the caller to
    record, `Defer`, or None when it failed for good without an error to raise."""
    if claim.destination is None:
        _fail(claim, "the channel, subscriber or person was deleted")
        return None
    pace = CHANNELS[claim.kind].pacing(claim.destination, settings)
    if pace and at is None:
        wait = _reserve(*pace)
        if wait > MAX_SLEEP_S:
            _release(claim, error=None, counted=False)
            return Defer(time.time() + wait)
        if wait > 0:
            time.sleep(wait)
    elif at is not None and at > time.time():
        time.sleep(min(at - time.time(), MAX_SLEEP_S))
    started = time.perf_counter()
    try:
        sent = CHANNELS[claim.kind].deliver(
            claim.notice, claim.destination, settings, AddressPolicy.from_settings(settings)
        )
    except TransportError as e:
        return _failed(claim, e, pace, final)
    except Exception:
        if final:  # no retry will come for it: failed, not left pending
            _fail(claim, "internal error (see the worker's log)")
        else:
            _release(claim, error="internal error (see the worker's log)", counted=True)
        raise
    if sent.pause_s > 0 and pace:
        _hold(pace[0], sent.pause_s)
    return Delivered(claim.id, sent.reference, round((time.perf_counter() - started) * 1000))


def send(notification_id: int, at: float | None, message: dramatiq.Message, settings: Settings) -> None:
    """One attempt of the `send` actor's ``message``: deliver the notification, or, when its
    destination asks to wait, send the message again, delayed until then (with the same priority).

    A transient failure on the message's last attempt (see `pulse.middleware.retries`) fails the
    notification for good; before that it stays pending for the retry.
    """
    broker = dramatiq.get_broker()
    final = last_attempt(broker, message)
    deferred = deliver(notification_id, message.message_id, settings, at=at, final=final)
    if deferred is not None:
        send_later(broker, message, notification_id, deferred)


def send_later(broker: dramatiq.Broker, message: dramatiq.Message[Any], notification_id: int, deferred: Defer) -> None:
    """Enqueue a `send` of the notification, delayed until ``deferred.at``, on ``message``'s queue
    and with its priority."""
    later: dramatiq.Message[Any] = dramatiq.Message(
        queue_name=message.queue_name,
        actor_name="send",
        args=(notification_id,),
        kwargs={"at": deferred.at},
        options={"broker_priority": message.options.get("broker_priority", PRIORITY_ROUTINE)},
    )
    broker.enqueue(later, delay=max(0, round((deferred.at - time.time()) * 1000)))


def _failed(claim: Claim, error: TransportError, pace: tuple[str, float] | None, final: bool) -> Defer | None:
    reason = str(error)
    if error.retry_after is not None:
        wait = error.retry_after
        if pace:  # every worker holds off the destination; this one reserves the first sending time after
            _hold(pace[0], wait)
            wait = max(wait, _reserve(*pace))
        _release(claim, error=reason, counted=False)
        logger.info("Notification %s rate limited: retrying in %.1f s.", claim.id, wait)
        return Defer(time.time() + wait)
    if error.gone and claim.subscriber_id is not None:
        _fail(claim, f"{reason} (the subscription is gone: nothing more is sent to it)")
        Subscriber.update(gone_at=utcnow(), last_error=reason, last_error_at=utcnow()).where(
            Subscriber.id == claim.subscriber_id
        ).execute()
        logger.info("Subscriber %s is gone: its push subscription no longer exists.", claim.subscriber_id)
        return None
    if error.permanent or final:
        _fail(claim, reason)
        _record_destination_error(claim, reason)
        raise PermanentError(reason) if error.permanent else TransientError(reason)
    _release(claim, error=reason, counted=True)
    raise TransientError(reason)


def _claim(notification_id: int, claim_id: str, settings: Settings) -> Claim | None:
    row = db.execute_sql(CLAIM, {"id": notification_id, "by": claim_id}).fetchone()
    if row is None:
        if not Notification.select().where(Notification.id == notification_id).exists():
            raise PermanentError(f"notification {notification_id} does not exist")
        logger.info("Notification %s is not pending (sent, failed or being sent): nothing to do.", notification_id)
        return None
    return _claimed(row, settings)


def _claim_many(notification_ids: list[int], claim_id: str, settings: Settings) -> list[Claim]:
    rows = db.execute_sql(CLAIM_MANY, {"ids": notification_ids, "by": claim_id}).fetchall()
    if len(rows) < len(notification_ids):
        logger.info(
            "%d of %d notifications are not pending (sent, failed, being sent or deleted): nothing to do for them.",
            len(notification_ids) - len(rows),
            len(notification_ids),
        )
    return [_claimed(row, settings) for row in rows]


def _claimed(row: tuple[Any, ...], settings: Settings) -> Claim:
    """The `Claim` of a row of `CLAIM`."""
    nid, kind, channel_id, subscriber_id, event_id, event_type, payload, created_at, organization = row[:9]
    channel_settings, address, subscriber_settings, person_id, contact, link, reply_code = row[9:]
    destination = None
    if channel_settings is not None:
        destination = Destination(kind, channel_settings, f"pulse-{nid}", f"c{channel_id}")
    elif address is not None:
        destination = Destination(
            kind, subscriber_destination(kind, address, subscriber_settings), f"pulse-{nid}", f"s{subscriber_id}"
        )
    elif contact is not None:  # a person's address, for a notification addressed to them
        destination = Destination(kind, _person_destination(kind, contact), f"pulse-{nid}", f"p{person_id}")
    url = settings.public_url or None
    notice = render(event_id, event_type, payload, created_at, organization, url, link=link, reply_code=reply_code)
    return Claim(nid, kind, channel_id, subscriber_id, notice, destination)


def subscriber_destination(kind: str, address: str, settings: dict[str, Any]) -> dict[str, Any]:
    """A subscriber's settings in the shape its channel kind takes: the address where it goes."""
    return {**settings, CHANNELS[kind].address: address}


def _person_destination(kind: str, contact: str | dict[str, Any]) -> dict[str, Any]:
    """A person's address for ``kind`` as a subscriber's would be: a Web Push subscription is its
    endpoint, with its keys in the settings; any other is the address itself."""
    if isinstance(contact, dict):
        return subscriber_destination(kind, contact["endpoint"], {"keys": contact["keys"]})
    return subscriber_destination(kind, contact, {})


def _reserve(key: str, every: float) -> float:
    """Reserve the destination's next sending time; seconds until it comes (≤ 0: now)."""
    return float(db.execute_sql(RESERVE, {"key": key, "every": every}).fetchone()[0])


def _hold(key: str, seconds: float) -> None:
    """No message to this destination for ``seconds`` (a provider's Retry-After)."""
    db.execute_sql(HOLD, {"key": key, "wait": seconds})


def _release(claim: Claim, *, error: str | None, counted: bool) -> None:
    """Back to pending (a retry or a delayed send takes it); a wait is not ``counted`` as an attempt."""
    Notification.update(
        status="pending",
        claimed_by=None,
        last_error=error if error is not None else Notification.last_error,
        attempts=Notification.attempts - (0 if counted else 1),
    ).where(Notification.id == claim.id).execute()


def _fail(claim: Claim, error: str) -> None:
    """Failed for good (a sent one is recorded by `_record_sent`)."""
    Notification.update(status=FAILED, last_error=error, reference=None, duration_ms=None, sent_at=None).where(
        Notification.id == claim.id
    ).execute()


def _record_sent(sent: list[Delivered]) -> None:
    if sent:
        db.execute_sql(
            SENT_MANY,
            {
                "ids": [d.id for d in sent],
                "references": [d.reference for d in sent],
                "durations": [d.duration_ms for d in sent],
            },
        )


def _record_destination_error(claim: Claim, reason: str) -> None:
    now = utcnow()
    if claim.channel_id is not None:
        NotificationChannel.update(last_error=reason, last_error_at=now).where(
            NotificationChannel.id == claim.channel_id
        ).execute()
    elif claim.subscriber_id is not None:
        Subscriber.update(last_error=reason, last_error_at=now).where(Subscriber.id == claim.subscriber_id).execute()


def send_test(channel: NotificationChannel, settings: Settings) -> tuple[Sent, float]:
    """Send a test message through ``channel`` now (nothing is recorded); the provider's answer
    and the milliseconds taken. Raises `TransportError` with the provider's reason."""
    notice = Notice(
        kind="test",
        title="Test notification from Pulse",
        summary=f"If you can read this, the {channel.type} channel {channel.key!r} works.",
        organization=channel.organization.name,
        since=utcnow(),
        severity=INFO,
        event_id=0,
        url=settings.public_url or None,
    )
    destination = Destination(channel.type, channel.settings, f"pulse-test-{uuid.uuid4()}", f"c{channel.id}")
    started = time.perf_counter()
    sent = CHANNELS[channel.type].deliver(notice, destination, settings, AddressPolicy.from_settings(settings))
    return sent, (time.perf_counter() - started) * 1000
