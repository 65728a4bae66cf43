"""One evaluation of a calculated metric: its inputs' latest values, its formula, and what they
mean: a data point (one per due time, so a redelivered message writes nothing twice), the
metric's state and last value, and the status of the component it drives
(`pulse.components.thresholds`).

The rules, in order:
- an input whose source is gone or has no value yet: no value, state ``no_data``;
- an input older than the metric's ``max_age``: no value, state ``stale``, naming the input and
  its age;
- else the formula's value (`pulse.calculated.evaluation`): a number, a boolean (stored as 1 or
  0), or no value with the reason (division by zero, overflow, ...), state ``no_data``.

A value's time (``last_value_at``) is that of its oldest input: a metric fed by another is as
fresh as the oldest value behind it.

`evaluate_all` does it all for the ``recalculate_all`` actor: a batch of metrics read in one query
and written in one statement.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from pulse import logging as pulse_logging
from pulse.calculated import due
from pulse.calculated.evaluation import evaluate
from pulse.calculated.formula import FormulaError, parse
from pulse.components import thresholds
from pulse.components.thresholds import Thresholds
from pulse.db import db
from pulse.models import utcnow
from pulse.models.calculated import STALE
from pulse.models.metrics import NO_DATA
from pulse.spec import show_duration


@dataclasses.dataclass(frozen=True)
class Input:
    name: str
    source: str  # "metric http-errors", "extracted api/requests", "calculated error-budget"
    value: float | None
    at: datetime | None
    note: str | None  # why a calculated input has no value


@dataclasses.dataclass(frozen=True)
class Loaded:
    """What an evaluation needs of its metric, read in one statement."""

    id: int
    organization_id: int
    key: str
    name: str
    formula: str
    unit: str
    max_age: timedelta
    component_id: int | None
    state: str
    last_value: float | None
    last_evaluated_at: datetime | None
    feeds: bool  # another calculated metric reads this one
    thresholds: Thresholds
    inputs: tuple[Input, ...]


@dataclasses.dataclass(frozen=True)
class Evaluation:
    value: float | None
    state: str
    note: str | None  # why there is no value
    as_of: datetime | None  # the time of the oldest input
    stale_at: datetime | None  # when the oldest input grows older than max_age


_COLUMNS = [field.name for field in dataclasses.fields(Loaded)][:-2]  # the columns LOAD reads first, in order
_INPUTS = len(_COLUMNS) + len(thresholds.COLUMNS)  # where LOAD's rows have the input's columns
# What `Input` reads of a variable ``v``, and the joins to its source.
INPUT_COLUMNS = """v.name,
       CASE WHEN v.metrics_query_id IS NOT NULL THEN 'metric ' || q.key
            WHEN v.extracted_value_id IS NOT NULL THEN 'extracted ' || ec.key || '/' || e.name
            ELSE 'calculated ' || i.key END,
       coalesce(q.last_value, e.last_value, i.last_value),
       coalesce(q.last_value_at, e.last_at, i.last_value_at),
       i.last_note"""
SOURCES = """LEFT JOIN metrics_query q ON q.id = v.metrics_query_id
LEFT JOIN extracted_value e ON e.id = v.extracted_value_id
LEFT JOIN component ec ON ec.id = e.component_id
LEFT JOIN calculated_metric i ON i.id = v.calculated_input_id"""
LOAD = f"""
SELECT c.id, c.organization_id, c.key, c.name, c.formula, c.unit, c.max_age_seconds, c.component_id, c.state,
       c.last_value, c.last_evaluated_at,
       EXISTS (SELECT 1 FROM calculated_metric_variable d WHERE d.calculated_input_id = c.id),
       {thresholds.columns("c")}, {INPUT_COLUMNS}
FROM calculated_metric c
LEFT JOIN calculated_metric_variable v ON v.calculated_metric_id = c.id
{SOURCES}
WHERE c.id = ANY(%(ids)s)
ORDER BY c.id
"""
# The metrics an evaluation writes, locked in id order, as sources' marks lock them (`pulse.calculated.due`):
# a batch's statement that locked them in any other order could deadlock with a mark.
LOCK = "SELECT id FROM calculated_metric WHERE id = ANY(%(ids)s) ORDER BY id FOR NO KEY UPDATE"
# Each evaluation's data point, and its metric's state when the point is new and the latest
# evaluation: one statement for a batch. A mark that came during the evaluation keeps its due time;
# else the metric is due again when its oldest input grows stale.
SAVE = """
WITH given AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(slots)s::timestamptz[], %(values)s::float8[], %(notes)s::text[],
                         %(states)s::text[], %(as_of)s::timestamptz[], %(stale_at)s::timestamptz[])
        AS g (id, slot, value, note, state, as_of, stale_at)
), point AS (
    INSERT INTO calculated_metric_data_point (calculated_metric_id, scheduled_at, value, note)
    SELECT id, slot, value, note FROM given
    ON CONFLICT DO NOTHING
    RETURNING calculated_metric_id
)
UPDATE calculated_metric c SET
    state = g.state, last_value = g.value, last_value_at = g.as_of, last_note = g.note,
    last_evaluated_at = g.slot, sent_at = NULL,
    due_at = CASE WHEN c.pending_since IS NULL THEN g.stale_at ELSE c.due_at END
FROM point JOIN given g ON g.id = point.calculated_metric_id
WHERE c.id = g.id AND (c.last_evaluated_at IS NULL OR c.last_evaluated_at < g.slot)
RETURNING c.id
"""


logger = logging.getLogger(__name__)


def evaluate_all(slots: Sequence[tuple[int, datetime]]) -> list[int]:
    """Evaluate each (calculated metric id, the time it came due: the evaluation's key) with its
    inputs' latest values and record the outcomes, the metrics read in one query and (those driving
    no component) written in one statement; skipped: a metric gone, or one whose evaluation for
    this time or a later one is recorded already (a redelivered message). Then mark the metrics
    they feed whose inputs changed. Returns the ids of the events written, to publish.

    An evaluation that raises (a bug) leaves the others to be recorded; the first such error is
    raised after them, so that a retry evaluates only what is not recorded."""
    latest: dict[int, datetime] = {}
    for metric_id, slot in slots:  # a metric named twice: its latest time
        latest[metric_id] = max(slot, latest.get(metric_id, slot))
    due_now = []
    for (metric_id, slot), loaded in zip(latest.items(), load_all(list(latest)), strict=True):
        if loaded is None:
            logger.info("Calculated metric %s is gone: evaluation skipped.", metric_id)
        elif loaded.last_evaluated_at is None or loaded.last_evaluated_at < slot:
            due_now.append((loaded, slot))  # else a redelivered message, or one overtaken by a later evaluation
    if len(due_now) == 1:
        pulse_logging.bind(organizationId=due_now[0][0].organization_id, componentId=due_now[0][0].component_id)
    now = utcnow()
    evaluated, problem = [], None
    for loaded, slot in due_now:
        try:
            evaluated.append((loaded, slot, evaluation(loaded, max(now, slot))))
        except Exception as e:  # noqa: BLE001 - a bug: raised once the others are recorded
            problem = problem or e
    applied, written = record_all(evaluated, now)
    fed = [loaded.id for loaded, _, result in evaluated if loaded.id in applied and changed(loaded, result)]
    due.mark_dependents(fed)
    if problem is not None:
        raise problem
    return written


def load_all(calculated_metric_ids: Sequence[int]) -> list[Loaded | None]:
    """Each metric and its inputs' latest values, in one query: None where it was deleted."""
    rows: dict[int, list[tuple[Any, ...]]] = {}
    for row in db.execute_sql(LOAD, {"ids": list(calculated_metric_ids)}).fetchall():
        rows.setdefault(row[0], []).append(row)
    return [_loaded(rows[i]) if i in rows else None for i in calculated_metric_ids]


def _loaded(rows: list[tuple[Any, ...]]) -> Loaded:
    first = rows[0]
    inputs = tuple(Input(*row[_INPUTS:]) for row in rows if row[_INPUTS] is not None)
    columns = dict(zip(_COLUMNS, first, strict=False))
    columns["max_age"] = timedelta(seconds=columns["max_age"])
    return Loaded(**columns, thresholds=Thresholds.of_row(first[len(_COLUMNS) : _INPUTS]), inputs=inputs)


def evaluation(loaded: Loaded, now: datetime) -> Evaluation:
    """What the metric's formula gives for its inputs at ``now``."""
    try:
        formula = parse(loaded.formula)
    except FormulaError as e:  # the file's validation makes this one unlikely
        return Evaluation(None, NO_DATA, f"the formula is not valid: {e.reason}", None, None)
    inputs = {i.name: i for i in loaded.inputs}
    for name in formula.variables:
        given = inputs.get(name)
        if given is None:
            return Evaluation(None, NO_DATA, f"input {name} has no source", None, None)
        if given.value is None or given.at is None:
            why = f": {given.note}" if given.note else ""
            return Evaluation(None, NO_DATA, f"input {name} ({given.source}) has no value{why}", None, None)
    used = [inputs[name] for name in formula.variables]
    as_of = min(i.at for i in used if i.at is not None)
    for given in used:
        assert given.at is not None
        age = now - given.at
        if age >= loaded.max_age:
            limit = show_duration(loaded.max_age)
            note = f"input {given.name} ({given.source}) is {show_age(age)} old, older than max_age {limit}"
            return Evaluation(None, STALE, note, as_of, None)
    result = evaluate(formula, {i.name: i.value for i in used if i.value is not None})
    value = None if result.value is None else float(result.value)
    return Evaluation(value, loaded.thresholds.judge(value), result.reason, as_of, as_of + loaded.max_age)


def show_age(age: timedelta) -> str:
    """An age to the second: ``45s``, ``6m1s``, ``2h5m``."""
    seconds = round(age.total_seconds())
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m{seconds % 60}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60}m"


Evaluated = tuple[Loaded, datetime, Evaluation]  # a metric, the time it came due, and what it gives


def record_all(evaluated: Sequence[Evaluated], now: datetime) -> tuple[set[int], list[int]]:
    """Record evaluations: those of metrics driving no component in one transaction, each other
    one in its own with its component's status. Returns the ids of the metrics whose evaluation was
    applied (not recorded already, nor older than the latest applied) and those of the events
    written, to publish after commit."""
    plain = [e for e in evaluated if e[0].component_id is None]
    applied = set(_save(plain)) if plain else set()
    written: list[int] = []
    for loaded, scheduled_at, result in evaluated:
        if loaded.component_id is None:
            continue
        with db.atomic():
            if not _save([(loaded, scheduled_at, result)]):
                continue
            applied.add(loaded.id)
            why = loaded.thresholds.reason(loaded.name, loaded.unit, result.state, result.value, result.note)
            written += loaded.thresholds.observe(loaded.component_id, result.state, why, now)
    return applied, written


def _save(evaluated: Sequence[Evaluated]) -> list[int]:
    """Write the evaluations' points and states, the metrics locked first (`LOCK`), in one transaction.
    Returns the ids of the metrics whose evaluation was applied."""
    ids = [loaded.id for loaded, _, _ in evaluated]
    with db.atomic():
        db.execute_sql(LOCK, {"ids": ids})
        rows = db.execute_sql(
            SAVE,
            {
                "ids": ids,
                "slots": [slot for _, slot, _ in evaluated],
                "values": [result.value for _, _, result in evaluated],
                "notes": [result.note for _, _, result in evaluated],
                "states": [result.state for _, _, result in evaluated],
                "as_of": [result.as_of for _, _, result in evaluated],
                "stale_at": [result.stale_at for _, _, result in evaluated],
            },
        ).fetchall()
    return [row[0] for row in rows]


def changed(loaded: Loaded, result: Evaluation) -> bool:
    """Whether an evaluation changed what metrics fed by this one read (and there are some)."""
    return loaded.feeds and (result.value, result.state) != (loaded.last_value, loaded.state)
