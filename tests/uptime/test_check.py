"""What a check observes: the status its failed conditions and its error make (`pulse.uptime.check.observed`)."""

import pytest

from pulse.components.status import DEGRADED, MAJOR_OUTAGE, OPERATIONAL
from pulse.uptime.check import observed

O, D, M = OPERATIONAL, DEGRADED, MAJOR_OUTAGE  # noqa: E741 - a table reads better


@pytest.mark.parametrize(
    "failed, error, expected",
    [
        ([], None, O),
        ([True], None, D),
        ([True, True], None, D),
        ([False], None, M),
        ([True, False], None, M),
        ([], "timed out after 5.0 s", M),
        ([True], "connection refused", M),
    ],
)
def test_a_check_observes_a_status(failed, error, expected):
    assert observed(failed, error) == expected
