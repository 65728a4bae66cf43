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

`evaluate_slot` does it all for the ``recalculate`` actor.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime, timedelta

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
WHERE c.id = %(id)s
"""
# The data point, and the metric's state when the point is new and the latest evaluation. A mark
# that came during the evaluation keeps its due time; else the metric is due again when its oldest
# input grows stale.
SAVE = """
WITH point AS (
    INSERT INTO calculated_metric_data_point (calculated_metric_id, scheduled_at, value, note)
    VALUES (%(id)s, %(slot)s, %(value)s, %(note)s)
    ON CONFLICT DO NOTHING
    RETURNING calculated_metric_id
)
UPDATE calculated_metric c SET
    state = %(state)s, last_value = %(value)s, last_value_at = %(as_of)s, last_note = %(note)s,
    last_evaluated_at = %(slot)s, sent_at = NULL,
    due_at = CASE WHEN c.pending_since IS NULL THEN %(stale_at)s ELSE c.due_at END
FROM point
WHERE c.id = point.calculated_metric_id AND (c.last_evaluated_at IS NULL OR c.last_evaluated_at < %(slot)s)
RETURNING c.id
"""


logger = logging.getLogger(__name__)


def evaluate_slot(calculated_metric_id: int, slot: datetime) -> list[int]:
    """Evaluate one calculated metric with its inputs' latest values, for the time it came due
    (``slot``, the evaluation's key), and record the outcome, unless a later evaluation is recorded
    already or the metric is gone; then mark the metrics it feeds if what they read changed.
    Returns the ids of the events written, to publish."""
    loaded = load(calculated_metric_id)
    if loaded is None:
        logger.info("Calculated metric %s is gone: evaluation skipped.", calculated_metric_id)
        return []
    pulse_logging.bind(organizationId=loaded.organization_id, componentId=loaded.component_id)
    if loaded.last_evaluated_at is not None and loaded.last_evaluated_at >= slot:
        return []  # a redelivered message, or one overtaken by a later evaluation
    now = utcnow()
    result = evaluation(loaded, max(now, slot))
    applied, written = record(loaded, slot, result, now)
    if applied and changed(loaded, result):
        due.mark_dependents(loaded.id)
    return written


def load(calculated_metric_id: int) -> Loaded | None:
    """The metric and its inputs' latest values, or None if it was deleted."""
    rows = db.execute_sql(LOAD, {"id": calculated_metric_id}).fetchall()
    if not rows:
        return None
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


def record(loaded: Loaded, scheduled_at: datetime, result: Evaluation, now: datetime) -> tuple[bool, list[int]]:
    """Record an evaluation. Returns whether it was applied (not recorded already, nor older than
    the latest applied) and the ids of the events written, to publish after commit."""
    values = {
        "id": loaded.id,
        "slot": scheduled_at,
        "value": result.value,
        "note": result.note,
        "state": result.state,
        "as_of": result.as_of,
        "stale_at": result.stale_at,
    }
    if loaded.component_id is None:
        return db.execute_sql(SAVE, values).fetchone() is not None, []
    with db.atomic():
        if db.execute_sql(SAVE, values).fetchone() is None:
            return False, []
        why = loaded.thresholds.reason(loaded.name, loaded.unit, result.state, result.value, result.note)
        return True, loaded.thresholds.observe(loaded.component_id, result.state, why, now)


def changed(loaded: Loaded, result: Evaluation) -> bool:
    """Whether an evaluation changed what metrics fed by this one read (and there are some)."""
    return loaded.feeds and (result.value, result.state) != (loaded.last_value, loaded.state)
