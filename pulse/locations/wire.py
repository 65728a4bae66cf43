"""What travels between the central workers and a location, as JSON.

To a location, a batch of checks, sealed (Fernet: AES-128-CBC and HMAC-SHA256, from
``cryptography``) with its location's key: a check carries its target, whose headers may hold
credentials, and a location has no database to read it from. The key is derived from the central
``PULSE_LOCATIONS_SECRET`` and the location's name (`key`), so each location holds its own key
only (`pulse locations key NAME` prints it) and a message is readable by its location alone —
not in RabbitMQ's management UI, not in a dead-letter queue.

From a location, its results, plain (they hold what a check found, as the check history does):
one `Result` per check.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
from datetime import datetime
from typing import Any

from cryptography.fernet import Fernet, InvalidToken

from pulse.components.status import DEGRADED, MAJOR_OUTAGE, OPERATIONAL
from pulse.errors import PermanentError
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


def seal(checks: list[Check], location_key: str) -> str:
    """The batch of ``checks`` for a location, sealed with its key."""
    body = json.dumps([c.as_json() for c in checks], separators=(",", ":")).encode()
    return Fernet(location_key.encode()).encrypt(body).decode()


def unseal(token: str, location_key: str) -> list[Check]:
    """The checks of a sealed batch; PermanentError when it was not sealed with ``location_key``."""
    try:
        body = Fernet(location_key.encode()).decrypt(token.encode())
    except (InvalidToken, ValueError):
        raise PermanentError(
            "a batch of checks this location cannot open: PULSE_LOCATION_KEY is not the key of PULSE_LOCATION "
            "(`pulse locations key NAME` prints it where PULSE_LOCATIONS_SECRET is set)"
        ) from None
    return [Check.of_json(value) for value in json.loads(body)]


#: What a location's check may have seen (`pulse.uptime.check.observed`).
SEEN = (OPERATIONAL, DEGRADED, MAJOR_OUTAGE)


@dataclasses.dataclass(frozen=True)
class Result:
    """What a location's check of one slot found.

    Parameters:
      seen: the status it observed (`pulse.uptime.check.observed`).
      reason: why it failed, in one line, or None when every condition passed.
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
        """A result as a location sent it; PermanentError naming what is wrong with a malformed one."""
        try:
            component_id, slot, started_at, seen, reason, ms, code, abstained = value
            result = cls(
                int(component_id),
                datetime.fromisoformat(slot),
                datetime.fromisoformat(started_at),
                str(seen),
                None if reason is None else str(reason)[:1000],
                int(ms),
                None if code is None else int(code),
                bool(abstained),
            )
        except (TypeError, ValueError):
            raise PermanentError(f"a malformed location result: {str(value)[:200]}") from None
        if result.slot.tzinfo is None or result.started_at.tzinfo is None:
            raise PermanentError(f"a location result without a time zone: {str(value)[:200]}")
        if result.seen not in SEEN:
            raise PermanentError(f"a location result seeing {result.seen[:40]!r}, not one of {', '.join(SEEN)}")
        return result
