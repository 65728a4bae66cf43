"""What operators read of calculated metrics: each one's last value, its inputs and their ages."""

from __future__ import annotations

from typing import Any

from peewee import JOIN

from pulse.calculated.record import INPUT_COLUMNS, SOURCES, Input
from pulse.db import db
from pulse.models import CalculatedMetric, Component, Organization, utcnow

INPUTS = f"""
SELECT v.calculated_metric_id, {INPUT_COLUMNS}
FROM calculated_metric_variable v
{SOURCES}
WHERE v.calculated_metric_id = ANY(%(ids)s)
ORDER BY v.calculated_metric_id, v.name
"""


def overview(organization: str | None = None) -> list[dict[str, Any]]:
    """Every calculated metric (of one organization, given its slug): its state, last value, the
    time of its oldest input, why it has no value, and each input's value and age, marked stale
    when older than ``max_age`` now. LookupError for an unknown organization."""
    if organization and not Organization.select().where(Organization.slug == organization).exists():
        raise LookupError(f"no organization {organization!r}")
    query = (
        CalculatedMetric.select(CalculatedMetric, Organization.slug, Component.key.alias("component_key"))
        .join(Organization, on=CalculatedMetric.organization == Organization.id)
        .switch(CalculatedMetric)
        .join(Component, on=CalculatedMetric.component == Component.id, join_type=JOIN.LEFT_OUTER)
        .order_by(Organization.slug, CalculatedMetric.key)
        .dicts()
    )
    if organization:
        query = query.where(Organization.slug == organization)
    metrics: list[dict[str, Any]] = list(query)  # type: ignore[arg-type]
    inputs: dict[int, list[Input]] = {}
    for row in db.execute_sql(INPUTS, {"ids": [m["id"] for m in metrics]}):
        inputs.setdefault(row[0], []).append(Input(*row[1:]))
    now = utcnow()
    return [
        {
            "organization": m["slug"],
            "key": m["key"],
            "name": m["name"],
            "formula": m["formula"],
            "state": m["state"],
            "last_value": m["last_value"],
            "unit": m["unit"],
            "as_of": m["last_value_at"] and m["last_value_at"].isoformat(),
            "evaluated_at": m["last_evaluated_at"] and m["last_evaluated_at"].isoformat(),
            "note": m["last_note"],
            "component": m["component_key"],
            "max_age_seconds": m["max_age_seconds"],
            "inputs": [_input(i, m["max_age_seconds"], now) for i in inputs.get(m["id"], [])],
        }
        for m in metrics
    ]


def _input(given: Input, max_age_seconds: int, now: Any) -> dict[str, Any]:
    age = None if given.at is None else round((now - given.at).total_seconds(), 1)
    return {
        "name": given.name,
        "source": given.source,
        "value": given.value,
        "at": given.at and given.at.isoformat(),
        "age_seconds": age,
        "stale": age is not None and age >= max_age_seconds,
    }
