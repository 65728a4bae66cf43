"""Recording what locations found and taking each slot's verdict, once.

A location's results (`pulse.locations.wire.Result`) are written one row per (component, slot,
location) in ``location_check``, only for a slot that the batch they name (its nonce) sent that
location (``location_sent``), while the slot still waits for its verdict (its ``location_slot``
row) and before its ``decide_by``: the first result counts, and a result for any other slot, a
later one, or one sent twice changes nothing (it is counted in the location's summary:
`pulse.locations.allowance`). A slot still waiting then has its verdict taken if its votes decide
it already (`pulse.locations.quorum`); else the claim-and-send loop sends it for its final verdict
at its ``decide_by`` (`claim`, `decide`), when each listed location that has not answered is
recorded absent.

The verdict is recorded as the slot's ``uptime_check`` row, like a check made here, and applied
to the status by the same state machine (thresholds, incidents, notifications:
`pulse.uptime.record`): its unique key takes it once per slot, whichever worker takes it first.
Each transaction locks the components it records for first (in id order), so two workers
recording results of one component take turns and the second sees the first's votes.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from pulse.components.status import OPERATIONAL
from pulse.db import db
from pulse.locations import quorum
from pulse.locations.allowance import allowance
from pulse.locations.wire import Result
from pulse.models import utcnow
from pulse.net import Response
from pulse.uptime import record
from pulse.uptime.check import CheckResult

#: Why a location has no vote for a slot it did not answer.
ABSENT = "no result within the slot's time"

LOCK = "SELECT id FROM component WHERE id = ANY(%(ids)s) ORDER BY id FOR NO KEY UPDATE"

# A location's results, for the slots its batch sent it that still wait for it, of components that
# list it; a result for a slot it answered already changes nothing.
WRITE = """
INSERT INTO location_check (component_id, scheduled_at, location, started_at, checked_at, seen, abstained,
                            response_time_ms, status_code, reason)
SELECT r.id, r.slot, %(location)s, r.started, %(now)s, r.seen, r.abstained, r.ms, r.code, r.reason
FROM unnest(%(ids)s::bigint[], %(slots)s::timestamptz[], %(started)s::timestamptz[], %(seen)s::text[],
            %(abstained)s::boolean[], %(ms)s::integer[], %(codes)s::integer[], %(reasons)s::text[])
     AS r (id, slot, started, seen, abstained, ms, code, reason)
JOIN location_sent t ON t.component_id = r.id AND t.scheduled_at = r.slot AND t.location = %(location)s
                    AND t.nonce = %(nonce)s
JOIN location_slot s ON s.component_id = r.id AND s.scheduled_at = r.slot AND s.decide_by >= %(now)s
JOIN component c ON c.id = r.id AND %(location)s = ANY (c.locations)
ON CONFLICT (component_id, scheduled_at, location) DO NOTHING
RETURNING component_id, scheduled_at, abstained
"""

# The slots a batch sent a location.
BATCH = "SELECT component_id, scheduled_at FROM location_sent WHERE nonce = %(nonce)s AND location = %(location)s"

# The slots of the arrays still waiting for their verdict.
WAITING = """
SELECT s.component_id, s.scheduled_at FROM location_slot s
JOIN unnest(%(ids)s::bigint[], %(slots)s::timestamptz[]) AS w (id, slot)
  ON s.component_id = w.id AND s.scheduled_at = w.slot
"""

VOTES = """
SELECT l.component_id, l.scheduled_at, l.location, l.seen, l.abstained, l.started_at, l.response_time_ms,
       l.status_code, l.reason
FROM location_check l
JOIN unnest(%(ids)s::bigint[], %(slots)s::timestamptz[]) AS w (id, slot)
  ON l.component_id = w.id AND l.scheduled_at = w.slot
"""

DONE = """
DELETE FROM location_slot s USING unnest(%(ids)s::bigint[], %(slots)s::timestamptz[]) AS w (id, slot)
WHERE s.component_id = w.id AND s.scheduled_at = w.slot
"""

ABSENCES = """
INSERT INTO location_check (component_id, scheduled_at, location, checked_at, reason)
SELECT w.id, w.slot, l.location, %(now)s, %(absent)s
FROM unnest(%(ids)s::bigint[], %(slots)s::timestamptz[]) AS w (id, slot)
JOIN component c ON c.id = w.id
CROSS JOIN LATERAL unnest(c.locations) AS l (location)
ON CONFLICT DO NOTHING
"""

# The slots due their final verdict, claimed (the loop's claim): their waiting rows deleted.
CLAIM = """
DELETE FROM location_slot s
WHERE (s.component_id, s.scheduled_at) IN (
    SELECT component_id, scheduled_at FROM location_slot WHERE decide_by <= %(now)s
    ORDER BY decide_by LIMIT %(limit)s FOR UPDATE SKIP LOCKED
)
RETURNING s.component_id, s.scheduled_at, s.decide_by
"""

# The location's latest word, in a statement of its own (every batch of results of a location
# writes this one row: held only for the statement, not the batch's transaction).
HEARD = """
INSERT INTO location (name, last_result_at, abstaining_since) VALUES (%(location)s, %(now)s, %(since)s)
ON CONFLICT (name) DO UPDATE
SET last_result_at = greatest(location.last_result_at, excluded.last_result_at),
    abstaining_since = CASE WHEN excluded.abstaining_since IS NULL THEN NULL
                            ELSE coalesce(location.abstaining_since, excluded.abstaining_since) END
"""

Slot = tuple[int, datetime]


def record_results(location: str, nonce: str, results: Sequence[Result]) -> list[int]:
    """Record the results a location sent for its batch ``nonce`` and take the verdicts they
    decide, in one transaction; returns the ids of the events written, to publish once it
    committed. The results that do not count are counted for the location's summary."""
    sent = set(db.execute_sql(BATCH, {"nonce": nonce, "location": location}).fetchall())
    mine = [r for r in results if (r.component_id, r.slot) in sent]  # only their components are locked
    events, counted = _record(location, nonce, mine) if mine else ([], 0)
    allowance().unsent(location, len(results) - counted)
    return events


def _record(location: str, nonce: str, results: Sequence[Result]) -> tuple[list[int], int]:
    """`record_results` for results of slots the batch sent: the events written, and how many counted."""
    slots = sorted({(r.component_id, r.slot) for r in results})
    now = utcnow()
    with db.atomic():
        _lock(slots)
        written = db.execute_sql(
            WRITE,
            {
                "location": location,
                "nonce": nonce,
                "now": now,
                "ids": [r.component_id for r in results],
                "slots": [r.slot for r in results],
                "started": [r.started_at for r in results],
                "seen": [r.seen for r in results],
                "abstained": [r.abstained for r in results],
                "ms": [r.response_time_ms for r in results],
                "codes": [r.status_code for r in results],
                "reasons": [r.reason for r in results],
            },
        ).fetchall()
        counted = sorted({(component_id, slot) for component_id, slot, _ in written})
        waiting = db.execute_sql(WAITING, _arrays(counted)).fetchall() if counted else []
        events = _take([(component_id, slot) for component_id, slot in waiting], final=False)
    if written:  # its latest word, in a statement of its own once the batch's transaction is over
        abstaining = any(abstained for *_, abstained in written)
        db.execute_sql(HEARD, {"location": location, "now": now, "since": now if abstaining else None})
    return events, len(written)


def decide(slots: Sequence[Slot]) -> list[int]:
    """Take the final verdict of slots whose time is up (claimed by `claim`): each listed location
    that did not answer is recorded absent, and the votes that came decide, or nothing does."""
    if not slots:
        return []
    slots = sorted(set(slots))
    with db.atomic():
        _lock(slots)
        db.execute_sql(ABSENCES, _arrays(slots) | {"now": utcnow(), "absent": ABSENT})
        return _take(slots, final=True)


def claim(horizon: datetime, limit: int = 1000) -> list[tuple[Slot, datetime]]:
    """Claim the slots whose verdict is due by ``horizon`` (the loop's claim): ((component id,
    slot), decide_by) of each, in the caller's transaction."""
    rows = db.execute_sql(CLAIM, {"now": horizon, "limit": limit}).fetchall()
    return [((component_id, slot), by) for component_id, slot, by in rows]


def next_due() -> datetime | None:
    """The earliest time a slot's verdict is due, or None."""
    row = db.execute_sql("SELECT min(decide_by) FROM location_slot").fetchone()
    return row[0] if row else None


def _lock(slots: Sequence[Slot]) -> None:
    db.execute_sql(LOCK, {"ids": sorted({component_id for component_id, _ in slots})})


def _arrays(slots: Sequence[Slot]) -> dict[str, list]:
    return {"ids": [component_id for component_id, _ in slots], "slots": [slot for _, slot in slots]}


def _take(slots: Sequence[Slot], *, final: bool) -> list[int]:
    """Record the verdict of each slot its votes decide (all of them when ``final``), in the caller's transaction."""
    if not slots:
        return []
    votes: dict[Slot, list[tuple]] = defaultdict(list)
    for component_id, slot, *row in db.execute_sql(VOTES, _arrays(slots)).fetchall():
        votes[component_id, slot].append(row)
    decided, done = [], []
    for (component_id, slot), loaded in zip(slots, record.load_all(slots), strict=True):
        if loaded is None or not loaded.locations:
            done.append((component_id, slot))  # deleted, or no longer checked from locations
            continue
        rows = votes[component_id, slot]
        if final or len(rows) >= len(loaded.locations):
            done.append((component_id, slot))  # else the sweep records who did not answer
        if loaded.recorded:
            continue  # its verdict was taken already
        cast = [quorum.Vote(location, seen, abstained) for location, seen, abstained, *_ in rows if seen is not None]
        status = quorum.verdict(cast, len(loaded.locations), loaded.quorum, final=final)
        if status is not None:
            decided.append((loaded, slot, _combined(status, rows, loaded, slot)))
    if done:
        db.execute_sql(DONE, _arrays(done))
    return record.record_all(decided)


def _combined(status: str, votes: list[tuple], loaded: record.Loaded, slot: datetime) -> CheckResult:
    """The slot's verdict as a check result: the median response time and the first status code of
    the locations on the verdict's side, and why it fails (each failing location's reason)."""
    failing = status != OPERATIONAL
    side = [v for v in votes if v[1] is not None and not v[2] and (v[1] != OPERATIONAL) == failing]
    started = min((v[3] for v in votes if v[3] is not None), default=slot)
    ms = statistics.median(v[4] for v in side) if side else 0
    code = next((v[5] for v in side if v[5] is not None), None)
    error = None
    if failing:
        reasons = "; ".join(f"{v[0]}: {v[6]}" for v in sorted(side))
        error = f"failing from {len(side)} of {len(loaded.locations)} locations ({reasons})"
    return CheckResult(started, Response(status=code, response_time_ms=ms), error, [], status, {})
