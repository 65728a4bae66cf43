"""What every integration shares: what a poll found (`Sample`) and what a kind of integration is
(`Integration`). Calls go through `pulse.net.api.call`, so they are held to the address policy and
their errors are `ApiError`: permanent (a bad query, bad credentials) or worth retrying."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

from pulse.net import AddressPolicy, Response
from pulse.net.api import ApiError, json_body


def _sum(values: list[float]) -> float:
    """The exact sum (`math.fsum`); past the largest float, an infinity (fsum raises instead)."""
    try:
        return math.fsum(values)
    except OverflowError:
        return sum(values)


def _avg(values: list[float]) -> float:
    """The mean, exactly summed; of values whose sum overflows, the sum of their shares."""
    try:
        return math.fsum(values) / len(values)
    except OverflowError:
        return math.fsum(value / len(values) for value in values)


#: How the ``aggregate`` option makes one value of several series.
AGGREGATES: dict[str, Callable[[list[float]], float]] = {
    "first": lambda values: values[0],
    "sum": _sum,
    "avg": _avg,
    "min": min,
    "max": max,
}


@dataclasses.dataclass(frozen=True)
class Sample:
    """What one poll found.

    Parameters:
      value: the number, or None when there is no data (an empty result, NaN, an infinity).
      note: why there is no data, or how the value was made ("sum of 3 series").
    """

    value: float | None
    note: str = ""

    @classmethod
    def of(cls, value: float, note: str = "") -> Sample:
        """A number as a sample: NaN and the infinities are no data, said so."""
        if math.isnan(value):
            return cls(None, "the value is NaN")
        if math.isinf(value):
            return cls(None, f"the value is {'+' if value > 0 else '-'}Inf")
        return cls(value, note)


def json_object(response: Response, label: str) -> dict[str, Any]:
    """The JSON object a successful answer holds (as `json_body` reads it); anything else is a
    permanent `ApiError`."""
    answer = json_body(response)
    if not isinstance(answer, dict):
        raise malformed(label)
    return answer


def malformed(label: str) -> ApiError:
    """The permanent failure of an answer that is not the API's JSON (a proxy's page, a broken body)."""
    return ApiError(f"{label} answered something that is not its API's JSON", permanent=True)


def combine(values: list[float], options: Mapping[str, Any], label: str) -> Sample:
    """One `Sample` of the values of the series a query returned: the value of one series; of
    several, the query's ``aggregate`` rule over the finite ones (none: the poll fails, naming how
    many came back); of none, no data."""
    if not values:
        return Sample(None, "the query returned no series")
    if len(values) == 1:
        return Sample.of(values[0])
    aggregate = options.get("aggregate")
    if aggregate not in AGGREGATES:
        raise ApiError(
            f"{label}: the query returned {len(values)} series: choose how to make one value of them with "
            f"`aggregate: {' | '.join(AGGREGATES)}`",
            permanent=True,
        )
    kept = [value for value in values if math.isfinite(value)]
    if not kept:
        return Sample(None, f"none of the {len(values)} series has a finite value")
    return Sample.of(AGGREGATES[aggregate](kept), f"{aggregate} of {len(kept)} series")


@dataclasses.dataclass(frozen=True)
class Integration:
    """One kind of integration, everything Pulse knows of it, written once in its module.

    Parameters:
      kind: its type in the configuration file and the database ("prometheus").
      label: how messages name it ("Prometheus").
      query: ``query(settings, text, options, policy, timeout_s)`` runs one query and returns a
        `Sample`, or raises `pulse.net.api.ApiError`.
      fields: the settings it takes in the configuration file.
      optional: those of ``fields`` that may be left out.
      options: the per-query options it takes (``aggregate`` ...).
      check: ``check(text, options)`` refuses, with `ValueError`, a query the configuration file
        must not take (one that cannot be sent as it is written); None when only the vendor can tell.
    """

    kind: str
    label: str
    query: Callable[[Mapping[str, Any], str, Mapping[str, Any], AddressPolicy, float], Sample]
    fields: tuple[str, ...]
    optional: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    check: Callable[[str, Mapping[str, Any]], None] | None = None
