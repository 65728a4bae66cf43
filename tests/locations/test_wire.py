import json
from datetime import UTC, datetime

import pytest

from pulse.errors import PermanentError
from pulse.locations import wire
from pulse.uptime.kinds import Stored

SECRET = "s" * 40
SLOT = datetime(2026, 12, 5, 6, 0, tzinfo=UTC)
STORED = Stored("GET", "https://api.acme.example/health", {"Authorization": "Bearer hunter2"}, False, None, 2.0, None)


def test_a_batch_opens_with_its_locations_key_only():
    batch = wire.Batch(wire.nonce(), [wire.Check(7, SLOT, "http", STORED, ["[STATUS] == 200"])])
    sealed = wire.seal(batch, wire.key(SECRET, "eu"))

    assert "hunter2" not in sealed and "acme" not in sealed
    assert wire.unseal(sealed, wire.key(SECRET, "eu")) == batch
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


T = SLOT.isoformat()
GOOD = [7, T, T, "MAJOR_OUTAGE", "connection refused", 12, None, False]


def good(**changed):
    """A good result with some fields changed: by their index."""
    value = list(GOOD)
    for index, field in changed.items():
        value[int(index.removeprefix("f"))] = field
    return value


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("not a list", "not a list of 8 fields"),
        ([7, T], "not a list of 8 fields"),
        (good(f0=True), "component id is not a whole number"),
        (good(f0=0), "component id is not a whole number"),
        (good(f0=2**63), "component id is not a whole number"),
        (good(f0="7"), "component id is not a whole number"),
        (good(f1="yesterday"), "slot is not an ISO 8601 time"),
        (good(f1="2026-12-05T06:00:00"), "slot has no time zone"),
        (good(f1=T + " " * 40), "slot is not an ISO 8601 time"),
        (good(f2=None), "start is not an ISO 8601 time"),
        (good(f2="2999-01-01T00:00:00+00:00"), "started more than a day away from its slot"),
        (good(f3="UNDER_MAINTENANCE"), "status seen is not one of"),
        (good(f3=["OPERATIONAL"]), "status seen is not one of"),
        (good(f4="refused\x1b[2J"), "reason has control characters"),
        (good(f4="first line\nsecond line"), "reason has control characters"),
        (good(f4="\u202eevil"), "reason has control characters"),
        (good(f4="x" * 1001), "reason is not text of at most 1000"),
        (good(f4=7), "reason is not text"),
        (good(f5=float("inf")), "response time is not a whole number"),
        (good(f5=1.5), "response time is not a whole number"),
        (good(f5=-1), "response time is not a whole number"),
        (good(f5=86_400_001), "response time is not a whole number"),
        (good(f6=99), "status code is not a whole number from 100 to 999"),
        (good(f6=10**30), "status code is not a whole number"),
        (good(f7="false"), "abstained is not true or false"),
        (good(f7=0), "abstained is not true or false"),
    ],
)
def test_a_bad_result_is_refused_naming_the_field(value, problem):
    with pytest.raises(wire.RefusedError, match=problem):
        wire.Result.of_json(value)


def test_a_reason_goes_out_on_one_line_and_bounded():
    assert wire.one_line("refused\r\n\x1b[2J by\u202e peer") == "refused   [2J by  peer"
    assert len(wire.one_line("x" * 5000)) == wire.REASON_MAX
    assert wire.Result.of_json(good(f4=wire.one_line("a\nb"))).reason == "a b"


NONCE = "9f1c2c52-8d0e-4a43-9b0f-2f8c1f5d7a10"


def sent_by_location(args, **fields):
    """The body a location's worker (or anyone with its account) publishes."""
    message = {"queue_name": "uptime", "actor_name": "location_results", "args": args, "kwargs": {}, "options": {}}
    return json.dumps(message | fields).encode()


def test_a_locations_message_is_rebuilt_from_its_arguments_alone():
    body = sent_by_location(
        ["eu", NONCE, [GOOD]],
        options={"eta": 32503680000000, "max_retries": 10**9, "min_backoff": 1, "retries": 0},
        kwargs={"extra": 1},
        message_id="mine",
        message_timestamp=0,
    )

    message = wire.results_message("eu", body)

    assert (message.queue_name, message.actor_name) == ("uptime", "location_results")
    assert message.args == ("eu", NONCE, [GOOD])
    assert message.options == {} and message.kwargs == {}
    assert message.message_id != "mine" and message.message_timestamp > 0


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"\xff not even UTF-8", "not JSON"),
        (b'{"actor_name": "location_results", "args": ["eu", "' + NONCE.encode() + b'", [[7, "' + T.encode()
         + b'", "' + T.encode() + b'", "OPERATIONAL", null, Infinity, null, false]]]}', "not JSON \\(or has NaN"),
        (b"[" * 100_000, "not JSON"),
        (b" " * (wire.MAX_BODY + 1), "over 1,500,000 bytes"),
        (sent_by_location(["eu", NONCE, [GOOD]], actor_name="check"), "not a message for location_results"),
        (sent_by_location(["us", NONCE, [GOOD]]), "not this location's"),
        (sent_by_location(["eu", [GOOD]]), "not \\[location, nonce, results\\]"),
        (sent_by_location({"location": "eu"}), "not \\[location, nonce, results\\]"),
        (sent_by_location(["eu", "not-a-uuid", [GOOD]]), "nonce is not a UUID"),
        (sent_by_location(["eu", 7, [GOOD]]), "nonce is not a UUID"),
        (sent_by_location(["eu", NONCE, []]), "not a list of 1 to 1000"),
        (sent_by_location(["eu", NONCE, [GOOD] * 1001]), "not a list of 1 to 1000"),
        (sent_by_location(["eu", NONCE, [good(f4="\x07")]]), "reason has control characters"),
    ],
)  # fmt: skip
def test_a_locations_message_that_is_not_its_results_is_refused(body, problem):
    with pytest.raises(wire.RefusedError, match=problem):
        wire.results_message("eu", body)
