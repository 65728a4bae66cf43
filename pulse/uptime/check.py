"""What one uptime check found, whatever its kind: `judge` evaluates the conditions (and
extractions) on the `Response` a kind's check observed and returns the `CheckResult` that
`pulse.uptime.record` writes down. Each kind (`pulse.uptime.kinds`) makes its own exchange
(an HTTP request, a TCP connection…) and hands what it saw to `judge`.

Pure of the database.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from datetime import datetime

from pulse.components.status import DEGRADED, MAJOR_OUTAGE, OPERATIONAL
from pulse.net import Response
from pulse.uptime import conditions


@dataclasses.dataclass(frozen=True)
class CheckResult:
    started_at: datetime
    response: Response
    error: str | None
    results: list[conditions.Result]
    seen: str  # the status this check observed
    extracted: dict[str, float]

    @property
    def success(self) -> bool:
        return self.error is None and all(r.success for r in self.results)

    @property
    def reason(self) -> str:
        """Why the check failed, in one line: the error, or the failed conditions as resolved."""
        if self.error:
            return self.error
        failed = [r.resolved for r in self.results if not r.success]
        return "; ".join(failed) if failed else "all conditions passed"


def judge(
    started_at: datetime, response: Response, error: str | None, condition_texts: Sequence[str], extract: dict[str, str]
) -> CheckResult:
    """The result of a check started at ``started_at`` that observed ``response`` (and ``error``,
    why its exchange did not complete, or None): each condition evaluated on it, and each
    extraction's number (a JSON path into the body, by name) when the exchange completed."""
    parsed = [conditions.parse(text) for text in condition_texts]
    results = [conditions.evaluate(c, response) for c in parsed]
    failed = [c.response_time_only for c, r in zip(parsed, results, strict=True) if not r.success]
    extracted = {}
    if error is None:
        for name, path in extract.items():
            number = _number(conditions.extract(path, response))
            if number is not None:
                extracted[name] = number
    return CheckResult(started_at, response, error, results, observed(failed, error), extracted)


def observed(failed_response_time_only: Sequence[bool], error: str | None) -> str:
    """The status one check observed: OPERATIONAL when every condition passed, DEGRADED_PERFORMANCE
    when only [RESPONSE_TIME] conditions failed, MAJOR_OUTAGE otherwise.

    Parameters:
      failed_response_time_only: for each failed condition, whether it tests only [RESPONSE_TIME].
      error: why the exchange did not complete (refused, timed out…), or None.
    """
    if error is not None:
        return MAJOR_OUTAGE
    if not failed_response_time_only:
        return OPERATIONAL
    return DEGRADED if all(failed_response_time_only) else MAJOR_OUTAGE


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None
