"""When a heartbeat monitor expects its job and when it is overdue (`pulse.heartbeats.deadlines`):
pure, in tables. Cron expressions are read in the monitor's time zone, through real DST
transitions: Europe/Berlin springs forward on 2025-03-30 at 02:00 (to 03:00 CEST) and falls back
on 2025-10-26 at 03:00 (to 02:00 CET, the hour from 02:00 to 03:00 lived twice)."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from pulse.heartbeats.deadlines import Cron, Period, cron, first, following, missed, time_zone

BERLIN = ZoneInfo("Europe/Berlin")
HOUR = timedelta(hours=1)


def berlin(*parts, fold=0):
    """A time in Berlin as UTC; ``fold=1``: the second of a time an overlap lives twice."""
    return datetime(*parts, tzinfo=BERLIN, fold=fold).astimezone(UTC)


def utc(*parts):
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(
    ("base", "after", "expected"),
    [(utc(2025, 1, 1), utc(2025, 1, 1), utc(2025, 1, 1, 1)),  # a period after the ping
     (utc(2025, 1, 1), utc(2024, 12, 31), utc(2025, 1, 1, 1)),  # never before the ping's first run
     (utc(2025, 1, 1), utc(2025, 1, 1, 5, 30), utc(2025, 1, 1, 6)),  # on the ping's chain, not from "after"
     (utc(2025, 1, 1), utc(2025, 1, 1, 6), utc(2025, 1, 1, 7))],  # strictly after
)  # fmt: skip
def test_a_periods_next_run_is_on_the_chain_from_the_ping(base, after, expected):
    assert Period(HOUR).next(base, after) == expected


@pytest.mark.parametrize(
    ("until", "expected"),
    [(utc(2025, 1, 1, 0, 59), None), (utc(2025, 1, 1, 1), utc(2025, 1, 1, 1)),
     (utc(2025, 1, 1, 6, 59), utc(2025, 1, 1, 6))],
)  # fmt: skip
def test_a_periods_latest_run_is_the_last_of_the_chain_by_then(until, expected):
    assert Period(HOUR).latest(utc(2025, 1, 1), until) == expected


@pytest.mark.parametrize(
    ("expression", "zone", "after", "expected"),
    [
        ("0 3 * * *", "UTC", utc(2025, 1, 10, 3), utc(2025, 1, 11, 3)),  # strictly after a match
        ("0 3 * * *", "Europe/Berlin", utc(2025, 1, 10, 1), utc(2025, 1, 10, 2)),  # 03:00 CET
        ("0 3 * * *", "Europe/Berlin", utc(2025, 7, 10, 0, 30), utc(2025, 7, 10, 1)),  # 03:00 CEST
        # the gap: 02:30 does not exist on 2025-03-30; Debian's cron runs it at 03:00 CEST, once
        ("30 2 * * *", "Europe/Berlin", berlin(2025, 3, 29, 2, 31), berlin(2025, 3, 30, 3, 0)),
        ("30 2 * * *", "Europe/Berlin", berlin(2025, 3, 30, 3, 0), berlin(2025, 3, 31, 2, 30)),
        # the overlap: 02:30 comes twice on 2025-10-26; the job runs at the first, once
        ("30 2 * * *", "Europe/Berlin", berlin(2025, 10, 25, 2, 31), berlin(2025, 10, 26, 2, 30)),
        ("30 2 * * *", "Europe/Berlin", berlin(2025, 10, 26, 2, 31), berlin(2025, 10, 27, 2, 30)),
        ("30 2 * * *", "Europe/Berlin", berlin(2025, 10, 26, 2, 10, fold=1), berlin(2025, 10, 27, 2, 30)),
        # every half hour is every half hour of real time, the repeated hour included
        ("*/30 * * * *", "Europe/Berlin", berlin(2025, 10, 26, 2, 40), berlin(2025, 10, 26, 2, 0, fold=1)),
        ("*/30 * * * *", "Europe/Berlin", berlin(2025, 3, 30, 1, 40), berlin(2025, 3, 30, 3, 0)),
    ],
)
def test_a_crons_next_run_is_the_next_match_in_its_zone(expression, zone, after, expected):
    assert Cron(expression, zone).next(after, after) == expected


@pytest.mark.parametrize(
    ("until", "expected"),
    [
        (berlin(2025, 10, 26, 2, 29), berlin(2025, 10, 25, 2, 30)),
        (berlin(2025, 10, 26, 2, 30), berlin(2025, 10, 26, 2, 30)),  # at or before
        (berlin(2025, 10, 26, 2, 20, fold=1), berlin(2025, 10, 26, 2, 30)),  # the second 02:20 is after the 02:30
        (berlin(2025, 10, 26, 2, 40, fold=1), berlin(2025, 10, 26, 2, 30)),  # and the second 02:30 is no run
        (berlin(2025, 3, 30, 3, 10), berlin(2025, 3, 30, 3, 0)),  # the gap's run
    ],
)
def test_a_crons_latest_run_is_the_last_match_by_then(until, expected):
    assert Cron("30 2 * * *", "Europe/Berlin").latest(berlin(2025, 1, 1), until) == expected


def test_a_crons_latest_run_is_none_when_it_is_the_ping_or_before():
    daily = Cron("0 3 * * *")
    assert daily.latest(utc(2025, 1, 10, 3), utc(2025, 1, 11, 2)) is None
    assert daily.latest(utc(2025, 1, 10, 2), utc(2025, 1, 11, 2)) == utc(2025, 1, 10, 3)


GRACE = timedelta(minutes=10)
DAILY = Cron("0 3 * * *", "Europe/Berlin")  # 02:00 UTC in winter


@pytest.mark.parametrize(
    ("last_ping", "last_start", "expected"),
    [(None, None, None), (utc(2025, 1, 10, 2, 1), None, utc(2025, 1, 11, 2, 10)),
     (None, utc(2025, 1, 10, 12), utc(2025, 1, 10, 12, 10)),
     (utc(2025, 1, 10, 2, 1), utc(2025, 1, 10, 12), utc(2025, 1, 10, 12, 10)),  # the earlier
     (utc(2025, 1, 10, 2, 1), utc(2025, 1, 11, 2, 5), utc(2025, 1, 11, 2, 10))],
)  # fmt: skip
def test_the_first_deadline_is_the_next_runs_or_the_starts_the_earlier(last_ping, last_start, expected):
    assert first(DAILY, GRACE, last_ping, last_start) == expected


@pytest.mark.parametrize(
    ("now", "since", "expected_missed", "expected_next"),
    [
        (utc(2025, 1, 11, 2, 9), None, None, utc(2025, 1, 11, 2, 10)),  # not yet
        (utc(2025, 1, 11, 2, 10), None, utc(2025, 1, 11, 2, 10), utc(2025, 1, 12, 2, 10)),  # just missed
        # silent for a week: the latest deadline missed, once, and the next run's after now
        (utc(2025, 1, 18, 5), utc(2025, 1, 11, 2, 10), utc(2025, 1, 18, 2, 10), utc(2025, 1, 19, 2, 10)),
        # a deadline already claimed (the one waited for is later) is not missed again
        (utc(2025, 1, 11, 5), utc(2025, 1, 12, 2, 10), None, utc(2025, 1, 12, 2, 10)),
    ],
)
def test_a_claim_takes_the_latest_deadline_missed_and_moves_to_the_next(now, since, expected_missed, expected_next):
    last_ping = utc(2025, 1, 10, 2, 1)
    assert missed(DAILY, GRACE, last_ping, None, now, since) == expected_missed
    assert following(DAILY, GRACE, last_ping, None, now) == expected_next


def test_a_runs_start_is_a_deadline_once_then_the_runs_go_on():
    last_ping, start = utc(2025, 1, 10, 2, 1), utc(2025, 1, 10, 12)
    since = first(DAILY, GRACE, last_ping, start)
    now = start + GRACE
    assert missed(DAILY, GRACE, last_ping, start, now, since) == start + GRACE
    assert following(DAILY, GRACE, last_ping, start, now) == utc(2025, 1, 11, 2, 10)
    later = utc(2025, 1, 11, 2, 10)  # the next claim: the run's deadline, not the start's again
    assert missed(DAILY, GRACE, last_ping, start, later, since=later) == later


@pytest.mark.parametrize(
    ("value", "message"),
    [("61 * * * *", "'61 * * * *' is not a valid cron expression: bad minute"),
     ("0 25 * * *", "'0 25 * * *' is not a valid cron expression: bad hour"),
     ("0 0 31 2 *", "'0 0 31 2 *' is not a valid cron expression: bad day-of-month"),
     ("0 0 * * mon-", "'0 0 * * mon-' is not a valid cron expression: bad day-of-week"),
     ("* * * *", "'* * * *' has 4 fields; a cron expression has 5: minute, hour, day of month, month and day of week"),
     ("0 0 * * * *", "'0 0 * * * *' has 6 fields; a cron expression has 5"),
     ("@daily", "'@daily' has 1 field; a cron expression has 5"),
     ("1 " * 60 + "*", "a cron expression is at most 100 characters")],
)  # fmt: skip
def test_a_bad_cron_expression_is_refused_saying_what_is_wrong(value, message):
    with pytest.raises(ValueError, match="^" + message.replace("*", r"\*")):
        cron(value)


def test_a_cron_expression_is_kept_with_single_spaces():
    assert cron("  0  3 * *\t* ") == "0 3 * * *"


@pytest.mark.parametrize("value", ["Europe/Berlin", "UTC", "America/Argentina/Buenos_Aires", "Europe/Kiev"])
def test_an_iana_time_zone_is_taken(value):
    assert time_zone(value) == value


@pytest.mark.parametrize("value", ["Berlin", "CEST", "europe/berlin", "localtime", "+02:00", "../etc/passwd", ""])
def test_anything_else_is_not_a_time_zone(value):
    with pytest.raises(ValueError, match="is not an IANA time zone name"):
        time_zone(value)
