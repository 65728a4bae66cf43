"""Polls of metrics queries: each run against its integration, then what it found recorded
(`poll_all`, all the `polls` and `poll` actors do), a batch of polls due together at once.

A poll writes one `MetricDataPoint` per query and scheduled time (unique, so a redelivered poll
writes nothing twice), the query's state (ok, warning, critical, no data) and, when the query
drives a component, the status change it means, through the state machine uptime checks use
(`pulse.components.changes`): thresholds, incidents and events alike.

The rules of the thresholds are in `pulse.components.thresholds`.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import dramatiq

from pulse import logging as pulse_logging
from pulse.components import thresholds
from pulse.components.thresholds import Thresholds
from pulse.config import get_settings
from pulse.db import db
from pulse.errors import PermanentError, TransientError
from pulse.metrics.integrations import INTEGRATIONS, Sample
from pulse.models import Integration, MetricsQuery, utcnow
from pulse.net import AddressPolicy
from pulse.net.api import ApiError

logger = logging.getLogger(__name__)

TIMEOUT_S = 10.0  # seconds for one call to the vendor: connecting, sending, reading the answer
CONCURRENT_POLLS = 128  # requests in flight per worker process: 8 threads of full batches never wait
INTERNAL = "internal error (see the worker's log)"


@dataclasses.dataclass(frozen=True)
class Loaded:
    """What a poll needs of its query, read in one statement before the vendor is called."""

    id: int
    organization_id: int
    name: str
    pollable: bool  # not paused
    kind: str  # the integration's type
    integration_id: int
    settings: dict[str, Any]
    query: str
    options: dict[str, Any]
    unit: str
    component_id: int | None
    recorded: bool  # this slot is recorded already (a redelivered message)
    thresholds: Thresholds


_COLUMNS = [field.name for field in dataclasses.fields(Loaded)][:-1]  # the columns LOAD reads first, in order
LOAD = f"""
SELECT q.id, q.organization_id, q.name, NOT q.paused, i.type, i.id, i.settings, q.query, q.options, q.unit,
       q.component_id,
       EXISTS (SELECT 1 FROM metric_data_point p WHERE p.metrics_query_id = q.id AND p.scheduled_at = s.slot),
       {thresholds.columns("q")}, s.n
FROM unnest(%(ids)s::bigint[], %(slots)s::timestamptz[]) WITH ORDINALITY AS s (id, slot, n)
JOIN metrics_query q ON q.id = s.id JOIN integration i ON i.id = q.integration_id
"""
# Polls' data points, and each query's state when its point is new and its poll the latest applied:
# one statement for a batch. Its UPDATE locks the queries' rows, so two polls of one query finishing
# together apply one after the other, the later slot winning (the condition is checked again on the
# row a concurrent poll committed). What reads a query's latest value learns of a new one in this
# statement, from the table's triggers.
RECORD = """
WITH given AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(slots)s::timestamptz[], %(values)s::float8[], %(states)s::text[])
        AS g (id, slot, value, state)
), point AS (
    INSERT INTO metric_data_point (metrics_query_id, scheduled_at, value) SELECT id, slot, value FROM given
    ON CONFLICT DO NOTHING
    RETURNING metrics_query_id, scheduled_at
), recorded AS (
    UPDATE metrics_query q SET
        last_polled_at = g.slot,
        state = g.state,
        last_value = coalesce(g.value, q.last_value),
        last_value_at = CASE WHEN g.value IS NULL THEN q.last_value_at ELSE g.slot END,
        last_error = CASE WHEN g.value IS NULL THEN q.last_error END
    FROM point JOIN given g ON g.id = point.metrics_query_id AND g.slot = point.scheduled_at
    WHERE q.id = g.id AND (q.last_polled_at IS NULL OR q.last_polled_at < g.slot)
    RETURNING q.id
)
SELECT id FROM recorded
"""


@dataclasses.dataclass(frozen=True)
class Polled:
    """What a poll leaves its actor: the events to publish once committed, then the failure to
    raise (None: the poll is done)."""

    events: list[int] = dataclasses.field(default_factory=list)
    failure: BaseException | None = None


def poll_all(slots: Sequence[tuple[int, datetime]], *, final: bool) -> Polled:
    """Poll each (query id, slot) and record what it found, unless the slot is recorded already or
    the query is gone or paused: the queries read in one query, their requests made at once (each
    query's own, on a pool of request threads), what they found written in one statement (a query
    driving a component in a transaction of its own, with the status change). ``final``: no retry
    follows this attempt.

    A failure is shown on the query and its integration (`pulse metrics`), the vendor's text quoted
    (redacted and bounded, `pulse.net.api.quote`), and leaves the batch's other polls recorded. A
    transient one is retried (a 429 when the vendor says): the retry polls only the slots not
    recorded. A permanent one (bad credentials, a bad query, an answer that is not the vendor's
    JSON) is recorded as having no data and dead-lettered with its message, or, when a retry of
    the batch's other polls follows, said in a warning instead. When no retry follows, a slot is
    recorded as having no data, which the thresholds' no-data rule judges; its reason, which may
    reach subscribers, names the vendor and nothing it said ("Prometheus unavailable"). Any other
    exception is a bug: retried like a transient failure, it shows as an internal error and, on the
    last attempt, records no data all the same.
    """
    due = []
    for (query_id, slot), loaded in zip(slots, load_all(slots), strict=True):
        if loaded is None or not loaded.pollable:
            logger.info("Metrics query %s is gone or paused: poll skipped.", query_id)
        elif not loaded.recorded:  # else a redelivered message: this slot is recorded already
            due.append((loaded, slot))
    if len(due) == 1:
        pulse_logging.bind(organizationId=due[0][0].organization_id, componentId=due[0][0].component_id)
    found = run_all([loaded for loaded, _ in due])
    samples: list[tuple[Loaded, datetime, Sample]] = []
    retry: list[ApiError] = []
    permanent: list[tuple[Loaded, ApiError]] = []
    bugs: list[Exception] = []
    for (loaded, slot), sample in zip(due, found, strict=True):
        if isinstance(sample, Sample):
            samples.append((loaded, slot, sample))
        elif isinstance(sample, ApiError):
            failed(loaded, str(sample))
            if not sample.permanent and not final:
                retry.append(sample)
                continue
            samples.append((loaded, slot, unavailable(loaded)))
            if sample.permanent:
                permanent.append((loaded, sample))
            else:
                logger.warning("%s: %s; recorded as no data for %s.", loaded.name, sample, slot.isoformat())
        else:
            failed(loaded, INTERNAL)
            bugs.append(sample)
            if final:
                samples.append((loaded, slot, unavailable(loaded)))
    written = record_all(samples)
    return Polled(written, _failure(retry, permanent, bugs))


def _failure(
    retry: list[ApiError], permanent: list[tuple[Loaded, ApiError]], bugs: list[Exception]
) -> BaseException | None:
    """What a batch's failures leave its actor to raise: a bug for its traceback, else a retry of the
    transient failures (as late as the latest a vendor asked for), else the permanent failures for
    the dead letters, in one line. A permanent failure that a retry would hide gets a warning."""
    if bugs or retry:
        for loaded, error in permanent:
            logger.warning("%s: %s; recorded as no data.", loaded.name, error)
    if bugs:
        return bugs[0]
    if retry:
        text = _joined([str(error) for error in retry])
        delays = [error.retry_after for error in retry if error.retry_after is not None]
        if delays and len(delays) == len(retry):  # 429s only: come back when the vendors say
            return dramatiq.Retry(text, delay=round(max(delays) * 1000))
        return TransientError(text)
    if permanent:
        return PermanentError(_joined([str(error) for _, error in permanent]))
    return None


def _joined(texts: list[str]) -> str:
    """The first failure's text, and how many more there were."""
    return texts[0] if len(texts) == 1 else f"{texts[0]} (and {len(texts) - 1} other poll(s) of the batch)"


@functools.cache
def _policy() -> AddressPolicy:
    return AddressPolicy.from_settings(get_settings())


def load_all(slots: Sequence[tuple[int, datetime]]) -> list[Loaded | None]:
    """The query of each (query id, slot) poll, in one query: None where it was deleted."""
    if not slots:
        return []
    ids, times = zip(*slots, strict=True)
    rows = db.execute_sql(LOAD, {"ids": list(ids), "slots": list(times)}).fetchall()
    found = {row[-1]: row[:-1] for row in rows}
    return [_loaded(found[n]) if n in found else None for n in range(1, len(slots) + 1)]


def load(query_id: int, scheduled_at: datetime) -> Loaded | None:
    """The query of a poll, or None if it was deleted."""
    return load_all([(query_id, scheduled_at)])[0]


def _loaded(row: Sequence[Any]) -> Loaded:
    columns = dict(zip(_COLUMNS, row, strict=False))
    return Loaded(**columns, thresholds=Thresholds.of_row(row[len(_COLUMNS) :]))


def run(loaded: Loaded, policy: AddressPolicy, timeout_s: float) -> Sample:
    """Ask the integration; raises `pulse.net.api.ApiError` when it fails."""
    return INTEGRATIONS[loaded.kind].query(loaded.settings, loaded.query, loaded.options, policy, timeout_s)


def run_all(due: Sequence[Loaded]) -> list[Sample | Exception]:
    """Each query's sample, or the exception its request raised: in this thread for one, at once
    on the request pool for several."""
    policy = _policy()
    if len(due) == 1:
        return [_attempt(due[0], policy)]
    futures = [_requests().submit(_attempt, loaded, policy) for loaded in due]
    return [future.result() for future in futures]


def _attempt(loaded: Loaded, policy: AddressPolicy) -> Sample | Exception:
    try:
        return run(loaded, policy, TIMEOUT_S)
    except Exception as e:  # noqa: BLE001 - each poll's failure is its own (`poll_all`)
        return e


@functools.cache
def _requests() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(CONCURRENT_POLLS, thread_name_prefix="poll")


def record(loaded: Loaded, scheduled_at: datetime, sample: Sample) -> list[int]:
    """Record one poll (`record_all`)."""
    return record_all([(loaded, scheduled_at, sample)])


def record_all(polls: Sequence[tuple[Loaded, datetime, Sample]]) -> list[int]:
    """Record polls. Returns the ids of the events written, to publish after commit.

    A redelivered poll writes nothing; a poll older than the latest applied one keeps its data
    point but changes nothing. The polls of queries that drive no component are recorded in one
    statement; each other one in a transaction of its own, with the status change it means.
    """
    plain = [poll for poll in polls if poll[0].component_id is None]
    if plain:
        _write(plain)
    written: list[int] = []
    for loaded, scheduled_at, sample in polls:
        if loaded.component_id is None:
            continue
        with db.atomic():
            if not _write([(loaded, scheduled_at, sample)]):
                continue  # recorded already, or older than the latest poll applied
            state = loaded.thresholds.judge(sample.value)
            why = loaded.thresholds.reason(loaded.name, loaded.unit, state, sample.value, sample.note)
            written += loaded.thresholds.observe(loaded.component_id, state, why, utcnow())
    return written


def _write(polls: Sequence[tuple[Loaded, datetime, Sample]]) -> list[int]:
    """`RECORD` the polls; the ids of the queries whose poll was applied."""
    values = {
        "ids": [loaded.id for loaded, _, _ in polls],
        "slots": [slot for _, slot, _ in polls],
        "values": [sample.value for _, _, sample in polls],
        "states": [loaded.thresholds.judge(sample.value) for loaded, _, sample in polls],
    }
    return [row[0] for row in db.execute_sql(RECORD, values).fetchall()]


def unavailable(loaded: Loaded) -> Sample:
    """The no data of a poll that failed: its reason names the vendor, never what the vendor said
    (it reaches subscribers; the vendor's text is the query's ``last_error``, for operators)."""
    return Sample(None, f"{INTEGRATIONS[loaded.kind].label} unavailable")


def failed(loaded: Loaded, error: str) -> None:
    """Note a failed attempt on the query and its integration (`pulse metrics` shows it)."""
    now = utcnow()
    MetricsQuery.update(last_error=error, last_error_at=now).where(MetricsQuery.id == loaded.id).execute()
    Integration.update(last_error=error, last_error_at=now).where(Integration.id == loaded.integration_id).execute()
