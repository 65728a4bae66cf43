"""What travels between the central workers and a location, as JSON.

To a location, a batch of checks, sealed (Fernet: AES-128-CBC and HMAC-SHA256, from
``cryptography``) with its location's key: a check carries its target, whose headers may hold
credentials, and a location has no database to read it from. The key is derived from the central
``PULSE_LOCATIONS_SECRET`` and the location's name (`key`), so each location holds its own key
only (`pulse locations key NAME` prints it) and a message is readable by its location alone —
not in RabbitMQ's management UI, not in a dead-letter queue.

Each sealed batch carries a nonce of its own (`Batch`): the central workers note which slots they
sent to which location under it, and a location's results name the batch they answer.

From a location, its results, plain (they hold what a check found, as the check history does):
one `Result` per check. A location's worker is trusted with nothing but its own checks, so its
message is rebuilt from its arguments alone (`results_message`) and every field of every result
is checked (`Result.of_json`): a number finite and in its range, a time with its time zone, a
reason of one line without control characters (it reaches incidents and notifications as written).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import re
import uuid
from datetime import datetime, timedelta
from typing import Any

import dramatiq
from cryptography.fernet import Fernet, InvalidToken

from pulse.components.status import DEGRADED, MAJOR_OUTAGE, OPERATIONAL
from pulse.errors import PermanentError
from pulse.locations import RECORDED_ON, RESULTS_ACTOR
from pulse.net import AddressPolicy
from pulse.uptime.check import CheckResult
from pulse.uptime.kinds import KINDS, Stored


def key(secret: str, location: str) -> str:
    """The key of ``location``'s messages, derived from the central secret: a Fernet key (44 characters)."""
    digest = hmac.new(secret.encode(), b"pulse location " + location.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode()


@dataclasses.dataclass(frozen=True)
class Check:
    """One check a location makes: its component, slot, kind, target columns and conditions."""

    component_id: int
    slot: datetime
    kind: str
    stored: Stored
    conditions: list[str]

    def run(self, policy: AddressPolicy) -> CheckResult:
        """Check it now, by its kind (as `pulse.uptime.record.Loaded.run`)."""
        kind = KINDS[self.kind]
        return kind.run(kind.target(self.stored), self.conditions, {}, policy)

    def as_json(self) -> list[Any]:
        return [self.component_id, self.slot.isoformat(), self.kind, dataclasses.asdict(self.stored), self.conditions]

    @classmethod
    def of_json(cls, value: list[Any]) -> Check:
        component_id, slot, kind, stored, conditions = value
        if kind not in KINDS:
            raise PermanentError(f"check of component {component_id}: unknown kind {kind!r} (is this worker older?)")
        return cls(component_id, datetime.fromisoformat(slot), kind, Stored(**stored), conditions)


@dataclasses.dataclass(frozen=True)
class Batch:
    """A batch of checks for one location, and its nonce (a UUID, `nonce`): the results of its
    checks count only when they name it, for the slots sent under it (`pulse.locations.verdict`)."""

    nonce: str
    checks: list[Check]


def nonce() -> str:
    """A new batch's nonce."""
    return str(uuid.uuid4())


def seal(batch: Batch, location_key: str) -> str:
    """``batch`` for its location, sealed with its key."""
    body = {"nonce": batch.nonce, "checks": [c.as_json() for c in batch.checks]}
    return Fernet(location_key.encode()).encrypt(json.dumps(body, separators=(",", ":")).encode()).decode()


def unseal(token: str, location_key: str) -> Batch:
    """A sealed batch, opened; PermanentError when it was not sealed with ``location_key``."""
    try:
        body = Fernet(location_key.encode()).decrypt(token.encode())
    except (InvalidToken, ValueError):
        raise PermanentError(
            "a batch of checks this location cannot open: PULSE_LOCATION_KEY is not the key of PULSE_LOCATION "
            "(`pulse locations key NAME` prints it where PULSE_LOCATIONS_SECRET is set)"
        ) from None
    opened = json.loads(body)
    return Batch(opened["nonce"], [Check.of_json(value) for value in opened["checks"]])


#: What a location's check may have seen (`pulse.uptime.check.observed`).
SEEN = (OPERATIONAL, DEGRADED, MAJOR_OUTAGE)

#: The most results one message of a location may carry: a batch has at most the uptime loop's
#: ``batch_max`` (64) checks.
MAX_RESULTS = 1000
MAX_BODY = 1_500_000  # bytes of a results message: 1,000 results with reasons of 1,000 characters
REASON_MAX = 1000  # characters of a result's reason
MS_MAX = 86_400_000  # a response time, in milliseconds: a day is beyond any check's timeout
STARTED_WITHIN = timedelta(days=1)  # of its slot, a check's start (its batch expires after an interval)
ID_MAX = 2**63 - 1  # a component id (BIGINT)
TIME_MAX = 40  # characters of an ISO 8601 time
# C0 and C1 control characters, DEL, the line and paragraph separators and the bidirectional controls.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def one_line(reason: str) -> str:
    """``reason`` as a location sends it: each run of control characters a space, at most `REASON_MAX` characters."""
    return _CONTROL.sub(" ", reason)[:REASON_MAX]


class RefusedError(ValueError):
    """What a location sent is not what a location may send: the text says what is wrong (never the
    value itself, which may be anything)."""


@dataclasses.dataclass(frozen=True)
class Result:
    """What a location's check of one slot found.

    Parameters:
      seen: the status it observed (`pulse.uptime.check.observed`).
      reason: why it failed, in one line (`one_line`), or None when every condition passed.
      response_time_ms: how long the exchange took, in milliseconds.
      status_code: an HTTP check's status code (None for none).
      abstained: the location's canaries failed: it says nothing of the component.
    """

    component_id: int
    slot: datetime
    started_at: datetime
    seen: str
    reason: str | None
    response_time_ms: int
    status_code: int | None
    abstained: bool = False

    def as_json(self) -> list[Any]:
        return [
            self.component_id,
            self.slot.isoformat(),
            self.started_at.isoformat(),
            self.seen,
            self.reason,
            self.response_time_ms,
            self.status_code,
            self.abstained,
        ]

    @classmethod
    def of_json(cls, value: Any) -> Result:
        """A result as a location sent it; `RefusedError` naming the field that is wrong."""
        if not isinstance(value, list) or len(value) != 8:
            raise RefusedError("a result is not a list of 8 fields")
        component_id, slot, started_at, seen, reason, ms, code, abstained = value
        result = cls(
            _whole(component_id, "component id", 1, ID_MAX),
            _time(slot, "slot"),
            _time(started_at, "start"),
            _one_of(seen),
            None if reason is None else _reason(reason),
            _whole(ms, "response time", 0, MS_MAX),
            None if code is None else _whole(code, "status code", 100, 999),
            _flag(abstained),
        )
        if abs(result.started_at - result.slot) > STARTED_WITHIN:
            raise RefusedError("a result whose check started more than a day away from its slot")
        return result


def results_message(location: str, body: bytes) -> dramatiq.Message:
    """The message that records what ``location`` sent: a message for `RESULTS_ACTOR` whose
    arguments are ``[location, nonce, [result, ...]]``, rebuilt from its actor and arguments
    alone: no options (no ``eta``, no retries of its choosing), no keyword arguments, an id and
    timestamp of our own. `RefusedError` naming what is wrong."""
    if len(body) > MAX_BODY:
        raise RefusedError(f"its body is over {MAX_BODY:,} bytes")
    try:
        sent = json.loads(body, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise RefusedError("its body is not JSON (or has NaN or Infinity)") from None
    if not isinstance(sent, dict) or sent.get("actor_name") != RESULTS_ACTOR:
        raise RefusedError(f"it is not a message for {RESULTS_ACTOR}")
    args = sent.get("args")
    if not isinstance(args, list) or len(args) != 3:
        raise RefusedError("its arguments are not [location, nonce, results]")
    named, batch, results = args
    if named != location:
        raise RefusedError("its results are not this location's")
    if not isinstance(batch, str) or len(batch) > 36:
        raise RefusedError("its nonce is not a UUID")
    try:
        batch = str(uuid.UUID(batch))
    except ValueError:
        raise RefusedError("its nonce is not a UUID") from None
    if not isinstance(results, list) or not 0 < len(results) <= MAX_RESULTS:
        raise RefusedError(f"its results are not a list of 1 to {MAX_RESULTS}")
    parsed = [Result.of_json(r).as_json() for r in results]
    return dramatiq.Message(
        queue_name=RECORDED_ON, actor_name=RESULTS_ACTOR, args=(location, batch, parsed), kwargs={}, options={}
    )


def _no_constant(name: str) -> None:
    raise ValueError(name)


def _whole(value: Any, what: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise RefusedError(f"a result whose {what} is not a whole number from {low} to {high}")
    return value


def _time(value: Any, what: str) -> datetime:
    if not isinstance(value, str) or len(value) > TIME_MAX:
        raise RefusedError(f"a result whose {what} is not an ISO 8601 time")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise RefusedError(f"a result whose {what} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        raise RefusedError(f"a result whose {what} has no time zone")
    return parsed


def _one_of(seen: Any) -> str:
    if seen not in SEEN:
        raise RefusedError(f"a result whose status seen is not one of {', '.join(SEEN)}")
    return str(seen)


def _reason(reason: Any) -> str:
    if not isinstance(reason, str) or len(reason) > REASON_MAX:
        raise RefusedError(f"a result whose reason is not text of at most {REASON_MAX} characters")
    if _CONTROL.search(reason):
        raise RefusedError("a result whose reason has control characters")
    return reason


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise RefusedError("a result whose abstained is not true or false")
    return value
