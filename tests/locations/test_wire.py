from datetime import UTC, datetime

import pytest

from pulse.errors import PermanentError
from pulse.locations import wire
from pulse.uptime.kinds import Stored

SECRET = "s" * 40
SLOT = datetime(2026, 12, 5, 6, 0, tzinfo=UTC)
STORED = Stored("GET", "https://api.acme.example/health", {"Authorization": "Bearer hunter2"}, False, None, 2.0, None)


def test_a_batch_opens_with_its_locations_key_only():
    check = wire.Check(7, SLOT, "http", STORED, ["[STATUS] == 200"])
    sealed = wire.seal([check], wire.key(SECRET, "eu"))

    assert "hunter2" not in sealed and "acme" not in sealed
    assert wire.unseal(sealed, wire.key(SECRET, "eu")) == [check]
    with pytest.raises(PermanentError, match="PULSE_LOCATION_KEY is not the key of PULSE_LOCATION"):
        wire.unseal(sealed, wire.key(SECRET, "us"))
    with pytest.raises(PermanentError, match="PULSE_LOCATION_KEY"):
        wire.unseal(sealed, wire.key("t" * 40, "eu"))


def test_each_location_has_its_own_key():
    assert len({wire.key(SECRET, name) for name in ("eu", "us", "asia")}) == 3
    assert wire.key(SECRET, "eu") == wire.key(SECRET, "eu")


def test_a_result_travels_as_json():
    result = wire.Result(7, SLOT, SLOT, "MAJOR_OUTAGE", "connection refused", 12, None)

    assert wire.Result.of_json(result.as_json()) == result


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("not a list", "malformed"),
        ([7, SLOT.isoformat()], "malformed"),
        ([7, "yesterday", SLOT.isoformat(), "OPERATIONAL", None, 1, 200, False], "malformed"),
        ([7, "2026-12-05T06:00:00", SLOT.isoformat(), "OPERATIONAL", None, 1, 200, False], "without a time zone"),
        ([7, SLOT.isoformat(), SLOT.isoformat(), "UNDER_MAINTENANCE", None, 1, 200, False], "not one of"),
    ],
)
def test_a_malformed_result_is_refused_naming_the_problem(value, problem):
    with pytest.raises(PermanentError, match=problem):
        wire.Result.of_json(value)
