"""Who is on call (`pulse.oncall.rotation`): rotations across DST changes, restrictions, overrides, the
timeline, the configuration check and the text forms. Pure: no database, no broker.

Instants are written with their UTC offset by hand, so each row states which side of a DST change it
is on. The 2026 changes (checked against the zone database by `test_the_changes_these_tables_assume`):

- America/New_York: 2026-03-08 02:00 EST (-05:00) -> 03:00 EDT (-04:00), at 07:00Z;
  2026-11-01 02:00 EDT -> 01:00 EST, at 06:00Z (01:00-02:00 happens twice). 2027: 03-14 and 11-07.
- Europe/London: 2026-03-29 01:00 GMT (+00:00) -> 02:00 BST (+01:00), at 01:00Z;
  2026-10-25 02:00 BST -> 01:00 GMT, at 01:00Z (01:00-02:00 twice). 2027: 03-28 and 10-31.
- Australia/Sydney (southern hemisphere: back on the first Sunday of April, forward on the first
  Sunday of October): 2026-04-05 03:00 AEDT (+11:00) -> 02:00 AEST (+10:00), at 2026-04-04 16:00Z
  (02:00-03:00 twice); 2026-10-04 02:00 AEST -> 03:00 AEDT, at 2026-10-03 16:00Z. 2027: 04-04 and 10-03.
- Asia/Kolkata: +05:30 all year, no DST.

Most layers start on 2026-01-01 (a Thursday) with members ann, bob, cat: the daily shift that starts
on a date with day-of-year d is k = d - 1 and belongs to members[k % 3] (2026-03-08 is day 67: k 66,
ann). Weekly Monday 09:00 layers first hand off on Monday 2026-01-05 (day 5): the Monday of day d
starts shift (d - 5) / 7. `every: 12h` from 08:00 starts shift 2(d - 1) at 08:00 and 2(d - 1) + 1 at
20:00; `every: 8h` from 06:00 (ann, bob, cat, dan: members[k % 4]) starts 3(d - 1) + 0, 1, 2 at
06:00, 14:00 and 22:00.
"""

import bisect
import dataclasses
import itertools
import random
import time as clock
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from pulse.oncall.rotation import (
    EVERY_DAY,
    NOBODY,
    Handoff,
    Layer,
    Override,
    Schedule,
    Shift,
    Window,
    format_every,
    on_call,
    parse_every,
    parse_handoff,
    parse_time_zone,
    parse_window,
    problems,
    shifts,
)

ZONES = {
    "new_york": ZoneInfo("America/New_York"),
    "london": ZoneInfo("Europe/London"),
    "sydney": ZoneInfo("Australia/Sydney"),
    "kolkata": ZoneInfo("Asia/Kolkata"),
}
PEOPLE = ("ann", "bob", "cat")
H = timedelta(hours=1)


def at(text: str) -> datetime:
    """An aware instant from ISO text with its offset, such as 2026-03-08T01:59-05:00."""
    instant = datetime.fromisoformat(text)
    assert instant.utcoffset() is not None, text
    return instant


def utc(text: str) -> datetime:
    """A UTC instant from ISO text without offset, such as 2026-03-08T07:00."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def rotation(text: str) -> str | timedelta:
    return text if text in ("daily", "weekly") else parse_every(text)


def layer(
    kind: str = "daily",
    handoff: str = "09:00",
    start: str = "2026-01-01",
    members: tuple[str, ...] = PEOPLE,
    restrict: tuple[str, ...] = (),
) -> Layer:
    windows = tuple(parse_window(text) for text in restrict)
    return Layer(rotation(kind), parse_handoff(handoff), date.fromisoformat(start), members, windows)


def schedule(zone: str, *layers: Layer, overrides: tuple[Override, ...] = ()) -> Schedule:
    return Schedule("primary", ZONES[zone], tuple(layers), overrides)


def who(expected: str | None) -> tuple[str, ...]:
    return () if expected is None else (expected,)


def row_id(value: object) -> str:
    return str(value) if not isinstance(value, tuple) else "-".join(map(str, value))


FOUR = ("ann", "bob", "cat", "dan")
LAYERS = {
    "daily": layer("daily"),
    "weekly": layer("weekly", "monday 09:00"),
    "12h": layer("12h", "08:00"),
    "8h": layer("8h", "06:00", members=FOUR),
    "daily 01:30": layer("daily", "01:30", "2026-10-30", ("ann", "bob")),
    "daily 02:30": layer("daily", "02:30", "2026-03-07", ("ann", "bob")),
}


# The zone database says what the tables assume.


@pytest.mark.parametrize(
    "zone, change, before, after",
    [
        ("new_york", "2026-03-08T07:00", -5, -4),
        ("new_york", "2026-11-01T06:00", -4, -5),
        ("new_york", "2027-03-14T07:00", -5, -4),
        ("new_york", "2027-11-07T06:00", -4, -5),
        ("london", "2026-03-29T01:00", 0, 1),
        ("london", "2026-10-25T01:00", 1, 0),
        ("london", "2027-03-28T01:00", 0, 1),
        ("london", "2027-10-31T01:00", 1, 0),
        ("sydney", "2026-04-04T16:00", 11, 10),
        ("sydney", "2026-10-03T16:00", 10, 11),
        ("sydney", "2027-04-03T16:00", 11, 10),
        ("sydney", "2027-10-02T16:00", 10, 11),
        ("kolkata", "2026-03-08T07:00", 5.5, 5.5),
        ("kolkata", "2026-10-04T16:00", 5.5, 5.5),
    ],
)
def test_the_changes_these_tables_assume(zone, change, before, after):
    instant = utc(change)
    assert (instant - timedelta(microseconds=1)).astimezone(ZONES[zone]).utcoffset() == before * H
    assert instant.astimezone(ZONES[zone]).utcoffset() == after * H


# Daily at 09:00, from 2026-01-01: one minute before and after each handoff around each change.

DAILY = [
    # New York forward, Sunday 2026-03-08. Shifts: 03-06 bob (k 64), 03-07 cat (65), 03-08 ann (66), 03-09 bob.
    ("new_york", "2026-03-07T08:59-05:00", "bob"),
    ("new_york", "2026-03-07T09:01-05:00", "cat"),
    ("new_york", "2026-03-08T01:59-05:00", "cat"),
    ("new_york", "2026-03-08T03:00-04:00", "cat"),
    ("new_york", "2026-03-08T08:59-04:00", "cat"),
    ("new_york", "2026-03-08T08:59:59.999999-04:00", "cat"),
    ("new_york", "2026-03-08T09:00-04:00", "ann"),
    ("new_york", "2026-03-08T09:01-04:00", "ann"),
    ("new_york", "2026-03-08T13:30+00:00", "ann"),  # 09:30 EDT: 24h after the last handoff would be 14:00Z
    ("new_york", "2026-03-09T08:59-04:00", "ann"),
    ("new_york", "2026-03-09T09:01-04:00", "bob"),
    # New York back, Sunday 2026-11-01. Shifts: 10-30 cat (302), 10-31 ann (303), 11-01 bob (304), 11-02 cat.
    ("new_york", "2026-10-31T08:59-04:00", "cat"),
    ("new_york", "2026-10-31T09:01-04:00", "ann"),
    ("new_york", "2026-11-01T01:30-04:00", "ann"),  # the repeated hour, first time
    ("new_york", "2026-11-01T01:30-05:00", "ann"),  # and second time
    ("new_york", "2026-11-01T08:59-05:00", "ann"),
    ("new_york", "2026-11-01T13:30+00:00", "ann"),  # 08:30 EST: 24h after the last handoff would be 13:00Z
    ("new_york", "2026-11-01T09:00-05:00", "bob"),
    ("new_york", "2026-11-01T09:01-05:00", "bob"),
    ("new_york", "2026-11-02T08:59-05:00", "bob"),
    ("new_york", "2026-11-02T09:01-05:00", "cat"),
    # London forward, Sunday 2026-03-29. Shifts: 03-27 bob (85), 03-28 cat (86), 03-29 ann (87), 03-30 bob.
    ("london", "2026-03-28T08:59+00:00", "bob"),
    ("london", "2026-03-28T09:01+00:00", "cat"),
    ("london", "2026-03-29T00:59+00:00", "cat"),
    ("london", "2026-03-29T02:00+01:00", "cat"),
    ("london", "2026-03-29T08:59+01:00", "cat"),
    ("london", "2026-03-29T08:30+00:00", "ann"),  # 09:30 BST
    ("london", "2026-03-29T09:01+01:00", "ann"),
    ("london", "2026-03-30T08:59+01:00", "ann"),
    ("london", "2026-03-30T09:01+01:00", "bob"),
    # London back, Sunday 2026-10-25. Shifts: 10-23 bob (295), 10-24 cat (296), 10-25 ann (297), 10-26 bob.
    ("london", "2026-10-24T08:59+01:00", "bob"),
    ("london", "2026-10-24T09:01+01:00", "cat"),
    ("london", "2026-10-25T01:30+01:00", "cat"),
    ("london", "2026-10-25T01:30+00:00", "cat"),
    ("london", "2026-10-25T08:30+00:00", "cat"),  # 24h after the last handoff would be 08:00Z
    ("london", "2026-10-25T08:59+00:00", "cat"),
    ("london", "2026-10-25T09:01+00:00", "ann"),
    ("london", "2026-10-26T08:59+00:00", "ann"),
    ("london", "2026-10-26T09:01+00:00", "bob"),
    # Sydney back, Sunday 2026-04-05. Shifts: 04-03 cat (92), 04-04 ann (93), 04-05 bob (94), 04-06 cat.
    ("sydney", "2026-04-04T08:59+11:00", "cat"),
    ("sydney", "2026-04-04T09:01+11:00", "ann"),
    ("sydney", "2026-04-05T02:30+11:00", "ann"),
    ("sydney", "2026-04-05T02:30+10:00", "ann"),
    ("sydney", "2026-04-04T22:30+00:00", "ann"),  # 08:30 AEST: 24h after the last handoff would be 22:00Z
    ("sydney", "2026-04-05T08:59+10:00", "ann"),
    ("sydney", "2026-04-05T09:01+10:00", "bob"),
    ("sydney", "2026-04-06T08:59+10:00", "bob"),
    ("sydney", "2026-04-06T09:01+10:00", "cat"),
    # Sydney forward, Sunday 2026-10-04. Shifts: 10-02 bob (274), 10-03 cat (275), 10-04 ann (276), 10-05 bob.
    ("sydney", "2026-10-03T08:59+10:00", "bob"),
    ("sydney", "2026-10-03T09:01+10:00", "cat"),
    ("sydney", "2026-10-04T01:59+10:00", "cat"),
    ("sydney", "2026-10-04T03:00+11:00", "cat"),
    ("sydney", "2026-10-04T08:59+11:00", "cat"),
    ("sydney", "2026-10-03T22:30+00:00", "ann"),  # 09:30 AEDT
    ("sydney", "2026-10-04T09:01+11:00", "ann"),
    ("sydney", "2026-10-05T08:59+11:00", "ann"),
    ("sydney", "2026-10-05T09:01+11:00", "bob"),
    # Kolkata: the same dates, nothing moves. Before the first handoff, no one.
    ("kolkata", "2025-12-31T12:00+05:30", None),
    ("kolkata", "2026-01-01T08:59+05:30", None),
    ("kolkata", "2026-01-01T09:00+05:30", "ann"),
    ("kolkata", "2026-01-02T08:59+05:30", "ann"),
    ("kolkata", "2026-01-02T09:00+05:30", "bob"),
    ("kolkata", "2026-01-03T09:00+05:30", "cat"),
    ("kolkata", "2026-01-04T09:00+05:30", "ann"),
    ("kolkata", "2026-03-08T08:59+05:30", "cat"),
    ("kolkata", "2026-03-08T09:01+05:30", "ann"),
    ("kolkata", "2026-03-08T03:31+00:00", "ann"),
    ("kolkata", "2026-11-01T08:59+05:30", "ann"),
    ("kolkata", "2026-11-01T09:01+05:30", "bob"),
    ("kolkata", "2026-12-31T09:01+05:30", "bob"),  # day 365: k 364
    ("kolkata", "2027-01-01T09:01+05:30", "cat"),  # k 365
]


@pytest.mark.parametrize("zone, instant, expected", DAILY, ids=row_id)
def test_daily(zone, instant, expected):
    assert on_call(schedule(zone, layer("daily")), at(instant)) == who(expected)


# Weekly, Monday 09:00, from Thursday 2026-01-01 (first handoff Monday 2026-01-05).

WEEKLY = [
    ("kolkata", "2026-01-01T12:00+05:30", None),
    ("kolkata", "2026-01-05T08:59+05:30", None),
    ("kolkata", "2026-01-05T09:00+05:30", "ann"),
    ("kolkata", "2026-01-11T23:59+05:30", "ann"),
    ("kolkata", "2026-01-12T08:59+05:30", "ann"),
    ("kolkata", "2026-01-12T09:01+05:30", "bob"),
    ("kolkata", "2026-01-19T09:01+05:30", "cat"),
    ("kolkata", "2026-01-26T09:01+05:30", "ann"),
    # New York forward: 03-02 cat (k 8) for 167h, 03-09 ann (9), 03-16 bob (10); 02-23 bob (7).
    ("new_york", "2026-03-02T08:59-05:00", "bob"),
    ("new_york", "2026-03-02T09:01-05:00", "cat"),
    ("new_york", "2026-03-08T01:59-05:00", "cat"),
    ("new_york", "2026-03-08T03:00-04:00", "cat"),
    ("new_york", "2026-03-09T08:59-04:00", "cat"),
    ("new_york", "2026-03-09T09:01-04:00", "ann"),
    ("new_york", "2026-03-09T13:30+00:00", "ann"),  # 09:30 EDT: 168h after the last handoff would be 14:00Z
    ("new_york", "2026-03-16T08:59-04:00", "ann"),
    ("new_york", "2026-03-16T09:01-04:00", "bob"),
    # New York back: 10-26 ann (42) for 169h, 11-02 bob (43), 11-09 cat (44); 10-19 cat (41).
    ("new_york", "2026-10-26T08:59-04:00", "cat"),
    ("new_york", "2026-10-26T09:01-04:00", "ann"),
    ("new_york", "2026-11-01T01:30-04:00", "ann"),
    ("new_york", "2026-11-01T01:30-05:00", "ann"),
    ("new_york", "2026-11-02T08:59-05:00", "ann"),
    ("new_york", "2026-11-02T13:30+00:00", "ann"),  # 08:30 EST: 168h after the last handoff would be 13:00Z
    ("new_york", "2026-11-02T09:01-05:00", "bob"),
    ("new_york", "2026-11-09T08:59-05:00", "bob"),
    ("new_york", "2026-11-09T09:01-05:00", "cat"),
    # London forward: 03-23 cat (11) for 167h, 03-30 ann (12); 03-16 bob (10).
    ("london", "2026-03-23T08:59+00:00", "bob"),
    ("london", "2026-03-23T09:01+00:00", "cat"),
    ("london", "2026-03-29T00:30+00:00", "cat"),
    ("london", "2026-03-29T02:30+01:00", "cat"),
    ("london", "2026-03-30T08:59+01:00", "cat"),
    ("london", "2026-03-30T08:30+00:00", "ann"),  # 09:30 BST
    ("london", "2026-03-30T09:01+01:00", "ann"),
    ("london", "2026-04-06T09:01+01:00", "bob"),
    # London back: 10-19 cat (41) for 169h, 10-26 ann (42); 10-12 bob (40).
    ("london", "2026-10-19T08:59+01:00", "bob"),
    ("london", "2026-10-19T09:01+01:00", "cat"),
    ("london", "2026-10-25T01:30+01:00", "cat"),
    ("london", "2026-10-25T01:30+00:00", "cat"),
    ("london", "2026-10-26T08:30+00:00", "cat"),  # 168h after the last handoff would be 08:00Z
    ("london", "2026-10-26T08:59+00:00", "cat"),
    ("london", "2026-10-26T09:01+00:00", "ann"),
    ("london", "2026-11-02T09:01+00:00", "bob"),
    # Sydney back: 03-30 ann (12) for 169h, 04-06 bob (13); 03-23 cat (11).
    ("sydney", "2026-03-30T08:59+11:00", "cat"),
    ("sydney", "2026-03-30T09:01+11:00", "ann"),
    ("sydney", "2026-04-05T02:30+11:00", "ann"),
    ("sydney", "2026-04-05T02:30+10:00", "ann"),
    ("sydney", "2026-04-05T22:30+00:00", "ann"),  # 08:30 AEST on 04-06: 168h would be 22:00Z
    ("sydney", "2026-04-06T08:59+10:00", "ann"),
    ("sydney", "2026-04-06T09:01+10:00", "bob"),
    ("sydney", "2026-04-13T09:01+10:00", "cat"),
    # Sydney forward: 09-28 cat (38) for 167h, 10-05 ann (39); 09-21 bob (37).
    ("sydney", "2026-09-28T08:59+10:00", "bob"),
    ("sydney", "2026-09-28T09:01+10:00", "cat"),
    ("sydney", "2026-10-04T01:59+10:00", "cat"),
    ("sydney", "2026-10-04T03:00+11:00", "cat"),
    ("sydney", "2026-10-05T08:59+11:00", "cat"),
    ("sydney", "2026-10-04T22:30+00:00", "ann"),  # 09:30 AEDT on 10-05
    ("sydney", "2026-10-05T09:01+11:00", "ann"),
    ("sydney", "2026-10-12T09:01+11:00", "bob"),
]


@pytest.mark.parametrize("zone, instant, expected", WEEKLY, ids=row_id)
def test_weekly(zone, instant, expected):
    assert on_call(schedule(zone, layer("weekly", "monday 09:00")), at(instant)) == who(expected)


# Custom: every 12h from 08:00 (ann, bob, cat); every 8h from 06:00 (ann, bob, cat, dan).

EVERY_12H = [
    # New York forward: 03-07 day bob (130), night cat (131) for 11h; 03-08 day ann (132), night bob (133).
    ("new_york", "2026-03-07T19:59-05:00", "bob"),
    ("new_york", "2026-03-07T20:01-05:00", "cat"),
    ("new_york", "2026-03-08T01:59-05:00", "cat"),
    ("new_york", "2026-03-08T03:00-04:00", "cat"),
    ("new_york", "2026-03-08T07:59-04:00", "cat"),
    ("new_york", "2026-03-08T08:01-04:00", "ann"),
    ("new_york", "2026-03-08T12:30+00:00", "ann"),  # 08:30 EDT: 12h after the last handoff would be 13:00Z
    ("new_york", "2026-03-08T19:59-04:00", "ann"),
    ("new_york", "2026-03-08T20:01-04:00", "bob"),
    # New York back: 10-31 day ann (606), night bob (607) for 13h; 11-01 day cat (608), night ann (609).
    ("new_york", "2026-10-31T19:59-04:00", "ann"),
    ("new_york", "2026-10-31T20:01-04:00", "bob"),
    ("new_york", "2026-11-01T01:30-04:00", "bob"),
    ("new_york", "2026-11-01T01:30-05:00", "bob"),
    ("new_york", "2026-11-01T12:30+00:00", "bob"),  # 07:30 EST: 12h after the last handoff would be 12:00Z
    ("new_york", "2026-11-01T07:59-05:00", "bob"),
    ("new_york", "2026-11-01T08:01-05:00", "cat"),
    ("new_york", "2026-11-01T19:59-05:00", "cat"),
    ("new_york", "2026-11-01T20:01-05:00", "ann"),
    # London forward: 03-28 day bob (172), night cat (173) for 11h; 03-29 day ann (174), night bob (175).
    ("london", "2026-03-28T19:59+00:00", "bob"),
    ("london", "2026-03-28T20:01+00:00", "cat"),
    ("london", "2026-03-29T00:59+00:00", "cat"),
    ("london", "2026-03-29T02:00+01:00", "cat"),
    ("london", "2026-03-29T07:59+01:00", "cat"),
    ("london", "2026-03-29T07:30+00:00", "ann"),  # 08:30 BST
    ("london", "2026-03-29T08:01+01:00", "ann"),
    ("london", "2026-03-29T20:01+01:00", "bob"),
    # London back: 10-24 day bob (592), night cat (593) for 13h; 10-25 day ann (594), night bob (595).
    ("london", "2026-10-24T19:59+01:00", "bob"),
    ("london", "2026-10-24T20:01+01:00", "cat"),
    ("london", "2026-10-25T01:30+01:00", "cat"),
    ("london", "2026-10-25T01:30+00:00", "cat"),
    ("london", "2026-10-25T07:59+00:00", "cat"),
    ("london", "2026-10-25T08:01+00:00", "ann"),
    ("london", "2026-10-25T20:01+00:00", "bob"),
    # Sydney back: 04-04 day ann (186), night bob (187) for 13h; 04-05 day cat (188), night ann (189).
    ("sydney", "2026-04-04T19:59+11:00", "ann"),
    ("sydney", "2026-04-04T20:01+11:00", "bob"),
    ("sydney", "2026-04-05T02:30+11:00", "bob"),
    ("sydney", "2026-04-05T02:30+10:00", "bob"),
    ("sydney", "2026-04-05T07:59+10:00", "bob"),
    ("sydney", "2026-04-05T08:01+10:00", "cat"),
    ("sydney", "2026-04-05T20:01+10:00", "ann"),
    # Sydney forward: 10-03 day bob (550), night cat (551) for 11h; 10-04 day ann (552), night bob (553).
    ("sydney", "2026-10-03T19:59+10:00", "bob"),
    ("sydney", "2026-10-03T20:01+10:00", "cat"),
    ("sydney", "2026-10-04T01:59+10:00", "cat"),
    ("sydney", "2026-10-04T03:00+11:00", "cat"),
    ("sydney", "2026-10-04T07:59+11:00", "cat"),
    ("sydney", "2026-10-04T08:01+11:00", "ann"),
    ("sydney", "2026-10-04T20:01+11:00", "bob"),
    # Kolkata
    ("kolkata", "2026-01-01T07:59+05:30", None),
    ("kolkata", "2026-01-01T08:00+05:30", "ann"),
    ("kolkata", "2026-01-01T20:00+05:30", "bob"),
    ("kolkata", "2026-01-02T08:00+05:30", "cat"),
    ("kolkata", "2026-03-07T20:01+05:30", "cat"),
    ("kolkata", "2026-03-08T08:01+05:30", "ann"),
]

EVERY_8H = [
    # New York forward: 03-07 06:00 dan (195), 14:00 ann, 22:00 bob (197) for 7h; 03-08 cat (198), dan, ann.
    ("new_york", "2026-03-07T21:59-05:00", "ann"),
    ("new_york", "2026-03-07T22:01-05:00", "bob"),
    ("new_york", "2026-03-08T01:59-05:00", "bob"),
    ("new_york", "2026-03-08T03:00-04:00", "bob"),
    ("new_york", "2026-03-08T05:59-04:00", "bob"),
    ("new_york", "2026-03-08T06:01-04:00", "cat"),
    ("new_york", "2026-03-08T10:30+00:00", "cat"),  # 06:30 EDT: 8h after the last handoff would be 11:00Z
    ("new_york", "2026-03-08T13:59-04:00", "cat"),
    ("new_york", "2026-03-08T14:01-04:00", "dan"),
    ("new_york", "2026-03-08T22:01-04:00", "ann"),
    # New York back: 10-31 06:00 bob (909), 14:00 cat, 22:00 dan (911) for 9h; 11-01 ann (912), bob, cat.
    ("new_york", "2026-10-31T21:59-04:00", "cat"),
    ("new_york", "2026-10-31T22:01-04:00", "dan"),
    ("new_york", "2026-11-01T01:30-04:00", "dan"),
    ("new_york", "2026-11-01T01:30-05:00", "dan"),
    ("new_york", "2026-11-01T10:30+00:00", "dan"),  # 05:30 EST: 8h after the last handoff would be 10:00Z
    ("new_york", "2026-11-01T05:59-05:00", "dan"),
    ("new_york", "2026-11-01T06:01-05:00", "ann"),
    ("new_york", "2026-11-01T14:01-05:00", "bob"),
    ("new_york", "2026-11-01T22:01-05:00", "cat"),
    # London forward: 03-28 06:00 cat (258), 14:00 dan, 22:00 ann (260) for 7h; 03-29 bob (261), cat, dan.
    ("london", "2026-03-28T21:59+00:00", "dan"),
    ("london", "2026-03-28T22:01+00:00", "ann"),
    ("london", "2026-03-29T00:59+00:00", "ann"),
    ("london", "2026-03-29T02:00+01:00", "ann"),
    ("london", "2026-03-29T05:59+01:00", "ann"),
    ("london", "2026-03-29T06:01+01:00", "bob"),
    ("london", "2026-03-29T14:01+01:00", "cat"),
    # London back: 10-24 06:00 ann (888), 14:00 bob, 22:00 cat (890) for 9h; 10-25 dan (891), ann, bob.
    ("london", "2026-10-24T21:59+01:00", "bob"),
    ("london", "2026-10-24T22:01+01:00", "cat"),
    ("london", "2026-10-25T01:30+01:00", "cat"),
    ("london", "2026-10-25T01:30+00:00", "cat"),
    ("london", "2026-10-25T05:59+00:00", "cat"),
    ("london", "2026-10-25T06:01+00:00", "dan"),
    ("london", "2026-10-25T14:01+00:00", "ann"),
    # Sydney back: 04-04 06:00 dan (279), 14:00 ann, 22:00 bob (281) for 9h; 04-05 cat (282), dan, ann.
    ("sydney", "2026-04-04T21:59+11:00", "ann"),
    ("sydney", "2026-04-04T22:01+11:00", "bob"),
    ("sydney", "2026-04-05T02:30+11:00", "bob"),
    ("sydney", "2026-04-05T02:30+10:00", "bob"),
    ("sydney", "2026-04-05T05:59+10:00", "bob"),
    ("sydney", "2026-04-05T06:01+10:00", "cat"),
    ("sydney", "2026-04-05T14:01+10:00", "dan"),
    # Sydney forward: 10-03 06:00 bob (825), 14:00 cat, 22:00 dan (827) for 7h; 10-04 ann (828), bob, cat.
    ("sydney", "2026-10-03T21:59+10:00", "cat"),
    ("sydney", "2026-10-03T22:01+10:00", "dan"),
    ("sydney", "2026-10-04T01:59+10:00", "dan"),
    ("sydney", "2026-10-04T03:00+11:00", "dan"),
    ("sydney", "2026-10-04T05:59+11:00", "dan"),
    ("sydney", "2026-10-04T06:01+11:00", "ann"),
    ("sydney", "2026-10-04T14:01+11:00", "bob"),
    # Kolkata: 03-08 cat (198) from 06:00; 03-07 22:00 bob (197)
    ("kolkata", "2026-03-08T05:59+05:30", "bob"),
    ("kolkata", "2026-03-08T06:01+05:30", "cat"),
    ("kolkata", "2026-01-01T05:59+05:30", None),
    ("kolkata", "2026-01-01T06:00+05:30", "ann"),
    ("kolkata", "2026-01-01T14:00+05:30", "bob"),
    ("kolkata", "2026-01-01T22:00+05:30", "cat"),
    ("kolkata", "2026-01-02T06:00+05:30", "dan"),
    ("kolkata", "2026-01-02T14:00+05:30", "ann"),
]


@pytest.mark.parametrize("zone, instant, expected", EVERY_12H, ids=row_id)
def test_every_12h(zone, instant, expected):
    assert on_call(schedule(zone, layer("12h", "08:00")), at(instant)) == who(expected)


@pytest.mark.parametrize("zone, instant, expected", EVERY_8H, ids=row_id)
def test_every_8h(zone, instant, expected):
    assert on_call(schedule(zone, LAYERS["8h"]), at(instant)) == who(expected)


# Shift lengths across the changes: the wall clock keeps the handoff time, the shift stretches.

LENGTHS = [
    # zone, layer, from, to (both at handoffs), "person hours" of each shift
    ("new_york", "daily", "2026-03-06T09:00-05:00", "2026-03-09T09:00-04:00", "bob 24, cat 23, ann 24"),
    ("new_york", "daily", "2026-10-30T09:00-04:00", "2026-11-02T09:00-05:00", "cat 24, ann 25, bob 24"),
    ("london", "daily", "2026-03-27T09:00+00:00", "2026-03-30T09:00+01:00", "bob 24, cat 23, ann 24"),
    ("london", "daily", "2026-10-23T09:00+01:00", "2026-10-26T09:00+00:00", "bob 24, cat 25, ann 24"),
    ("sydney", "daily", "2026-04-03T09:00+11:00", "2026-04-06T09:00+10:00", "cat 24, ann 25, bob 24"),
    ("sydney", "daily", "2026-10-02T09:00+10:00", "2026-10-05T09:00+11:00", "bob 24, cat 23, ann 24"),
    ("kolkata", "daily", "2026-03-06T09:00+05:30", "2026-03-09T09:00+05:30", "bob 24, cat 24, ann 24"),
    ("new_york", "weekly", "2026-03-02T09:00-05:00", "2026-03-16T09:00-04:00", "cat 167, ann 168"),
    ("new_york", "weekly", "2026-10-26T09:00-04:00", "2026-11-09T09:00-05:00", "ann 169, bob 168"),
    ("london", "weekly", "2026-03-23T09:00+00:00", "2026-04-06T09:00+01:00", "cat 167, ann 168"),
    ("london", "weekly", "2026-10-19T09:00+01:00", "2026-11-02T09:00+00:00", "cat 169, ann 168"),
    ("sydney", "weekly", "2026-03-30T09:00+11:00", "2026-04-13T09:00+10:00", "ann 169, bob 168"),
    ("sydney", "weekly", "2026-09-28T09:00+10:00", "2026-10-12T09:00+11:00", "cat 167, ann 168"),
    ("kolkata", "weekly", "2026-03-02T09:00+05:30", "2026-03-16T09:00+05:30", "cat 168, ann 168"),
    ("new_york", "12h", "2026-03-07T08:00-05:00", "2026-03-08T20:00-04:00", "bob 12, cat 11, ann 12"),
    ("new_york", "12h", "2026-10-31T08:00-04:00", "2026-11-01T20:00-05:00", "ann 12, bob 13, cat 12"),
    ("london", "12h", "2026-03-28T08:00+00:00", "2026-03-29T20:00+01:00", "bob 12, cat 11, ann 12"),
    ("london", "12h", "2026-10-24T08:00+01:00", "2026-10-25T20:00+00:00", "bob 12, cat 13, ann 12"),
    ("sydney", "12h", "2026-04-04T08:00+11:00", "2026-04-05T20:00+10:00", "ann 12, bob 13, cat 12"),
    ("sydney", "12h", "2026-10-03T08:00+10:00", "2026-10-04T20:00+11:00", "bob 12, cat 11, ann 12"),
    ("kolkata", "12h", "2026-03-07T08:00+05:30", "2026-03-08T20:00+05:30", "bob 12, cat 12, ann 12"),
    ("new_york", "8h", "2026-03-07T14:00-05:00", "2026-03-08T14:00-04:00", "ann 8, bob 7, cat 8"),
    ("new_york", "8h", "2026-10-31T14:00-04:00", "2026-11-01T14:00-05:00", "cat 8, dan 9, ann 8"),
    ("london", "8h", "2026-03-28T14:00+00:00", "2026-03-29T14:00+01:00", "dan 8, ann 7, bob 8"),
    ("london", "8h", "2026-10-24T14:00+01:00", "2026-10-25T14:00+00:00", "bob 8, cat 9, dan 8"),
    ("sydney", "8h", "2026-04-04T14:00+11:00", "2026-04-05T14:00+10:00", "ann 8, bob 9, cat 8"),
    ("sydney", "8h", "2026-10-03T14:00+10:00", "2026-10-04T14:00+11:00", "cat 8, dan 7, ann 8"),
    # A handoff at 01:30 in New York: the first 01:30 of 2026-11-01 (EDT), so 24h then 25h.
    ("new_york", "daily 01:30", "2026-10-31T01:30-04:00", "2026-11-02T01:30-05:00", "bob 24, ann 25"),
    # A handoff at 02:30, which 2026-03-08 skips: read with EST, 07:30Z (03:30 EDT); 24h then 23h.
    ("new_york", "daily 02:30", "2026-03-07T02:30-05:00", "2026-03-09T02:30-04:00", "ann 24, bob 23"),
]


@pytest.mark.parametrize("zone, name, start, end, expected", LENGTHS, ids=row_id)
def test_shift_lengths(zone, name, start, end, expected):
    timeline = shifts(schedule(zone, LAYERS[name]), at(start), at(end))
    assert ", ".join(f"{s.person} {(s.end - s.start) / H:g}" for s in timeline) == expected
    assert timeline[0].start == at(start) and timeline[-1].end == at(end)


# Handoffs at a time the wall clock shows twice, or skips.

TWICE_OR_NEVER = [
    # New York daily 01:30 from 2026-10-30 (ann, bob): 10-31 bob, 11-01 ann at the first 01:30 (05:30Z), 11-02 bob.
    ("new_york", "01:30", "2026-10-30", "2026-11-01T01:29-04:00", "bob"),
    ("new_york", "01:30", "2026-10-30", "2026-11-01T01:30-04:00", "ann"),
    ("new_york", "01:30", "2026-10-30", "2026-11-01T01:45-04:00", "ann"),
    ("new_york", "01:30", "2026-10-30", "2026-11-01T01:15-05:00", "ann"),  # the second 01:15 is after the handoff
    ("new_york", "01:30", "2026-10-30", "2026-11-01T01:30-05:00", "ann"),  # the second 01:30 is no handoff
    ("new_york", "01:30", "2026-10-30", "2026-11-01T01:45-05:00", "ann"),
    ("new_york", "01:30", "2026-10-30", "2026-11-02T01:29-05:00", "ann"),
    ("new_york", "01:30", "2026-10-30", "2026-11-02T01:30-05:00", "bob"),
    # London daily 01:30 from 2026-10-24 (ann, bob): 10-25 bob from 01:30 BST (00:30Z).
    ("london", "01:30", "2026-10-24", "2026-10-25T01:29+01:00", "ann"),
    ("london", "01:30", "2026-10-24", "2026-10-25T01:30+01:00", "bob"),
    ("london", "01:30", "2026-10-24", "2026-10-25T01:10+00:00", "bob"),
    ("london", "01:30", "2026-10-24", "2026-10-25T01:50+00:00", "bob"),
    ("london", "01:30", "2026-10-24", "2026-10-26T01:29+00:00", "bob"),
    ("london", "01:30", "2026-10-24", "2026-10-26T01:31+00:00", "ann"),
    # Sydney daily 02:30 from 2026-04-04 (ann, bob): 04-05 bob from 02:30 AEDT (04-04 15:30Z).
    ("sydney", "02:30", "2026-04-04", "2026-04-05T02:29+11:00", "ann"),
    ("sydney", "02:30", "2026-04-04", "2026-04-05T02:30+11:00", "bob"),
    ("sydney", "02:30", "2026-04-04", "2026-04-05T02:10+10:00", "bob"),
    ("sydney", "02:30", "2026-04-04", "2026-04-05T02:40+10:00", "bob"),
    ("sydney", "02:30", "2026-04-04", "2026-04-06T02:29+10:00", "bob"),
    ("sydney", "02:30", "2026-04-04", "2026-04-06T02:31+10:00", "ann"),
    # Skipped: New York daily 02:30 from 2026-03-07 (ann, bob): 03-08 02:30 is read with EST, 03:30 EDT.
    ("new_york", "02:30", "2026-03-07", "2026-03-08T01:59-05:00", "ann"),
    ("new_york", "02:30", "2026-03-07", "2026-03-08T03:29-04:00", "ann"),
    ("new_york", "02:30", "2026-03-07", "2026-03-08T03:30-04:00", "bob"),
    ("new_york", "02:30", "2026-03-07", "2026-03-09T02:29-04:00", "bob"),
    ("new_york", "02:30", "2026-03-07", "2026-03-09T02:30-04:00", "ann"),
    # London daily 01:30 from 2026-03-28: 03-29 01:30 is read with GMT, 02:30 BST.
    ("london", "01:30", "2026-03-28", "2026-03-29T02:29+01:00", "ann"),
    ("london", "01:30", "2026-03-28", "2026-03-29T02:30+01:00", "bob"),
    # Sydney daily 02:30 from 2026-10-03: 10-04 02:30 is read with AEST, 03:30 AEDT.
    ("sydney", "02:30", "2026-10-03", "2026-10-04T03:29+11:00", "ann"),
    ("sydney", "02:30", "2026-10-03", "2026-10-04T03:30+11:00", "bob"),
]


@pytest.mark.parametrize("zone, handoff, start, instant, expected", TWICE_OR_NEVER, ids=row_id)
def test_handoff_at_a_time_that_happens_twice_or_never(zone, handoff, start, instant, expected):
    sched = schedule(zone, layer("daily", handoff, start, ("ann", "bob")))
    assert on_call(sched, at(instant)) == who(expected)


# Restrictions. New York, January 2026 (EST, -05:00): daily 09:00 from 2026-01-01, so 01-11 bob,
# 01-12 (Monday) cat, 01-13 ann, 01-14 bob, 01-15 cat, 01-16 (Friday) ann, 01-17 bob, 01-18 cat, 01-19 ann.

NIGHTS = "mon-fri 18:00-08:00"
WEEKEND = "sat-sun 00:00-24:00"

RESTRICTED = [
    (NIGHTS, "2026-01-12T07:59-05:00", None),  # Monday morning: Sunday has no night
    (NIGHTS, "2026-01-12T08:00-05:00", None),
    (NIGHTS, "2026-01-12T17:59-05:00", None),
    (NIGHTS, "2026-01-12T18:00-05:00", "cat"),
    (NIGHTS, "2026-01-12T23:59-05:00", "cat"),
    (NIGHTS, "2026-01-13T00:00-05:00", "cat"),
    (NIGHTS, "2026-01-13T07:59-05:00", "cat"),  # Monday's night, Monday's shift (handoff at 09:00)
    (NIGHTS, "2026-01-13T08:00-05:00", None),
    (NIGHTS, "2026-01-13T12:00-05:00", None),
    (NIGHTS, "2026-01-13T18:30-05:00", "ann"),
    (NIGHTS, "2026-01-14T00:00-05:00", "ann"),
    (NIGHTS, "2026-01-16T23:00-05:00", "ann"),  # Friday night
    (NIGHTS, "2026-01-17T07:59-05:00", "ann"),  # still Friday's night on Saturday morning
    (NIGHTS, "2026-01-17T08:00-05:00", None),
    (NIGHTS, "2026-01-17T18:30-05:00", None),  # Saturday has no night
    (NIGHTS, "2026-01-18T23:00-05:00", None),
    (NIGHTS, "2026-01-19T00:30-05:00", None),
    (NIGHTS, "2026-01-19T18:00-05:00", "ann"),
    (WEEKEND, "2026-01-16T23:59-05:00", None),
    (WEEKEND, "2026-01-17T00:00-05:00", "ann"),  # Friday's shift until 09:00
    (WEEKEND, "2026-01-17T08:59-05:00", "ann"),
    (WEEKEND, "2026-01-17T09:00-05:00", "bob"),
    (WEEKEND, "2026-01-18T09:00-05:00", "cat"),
    (WEEKEND, "2026-01-18T23:59-05:00", "cat"),
    (WEEKEND, "2026-01-19T00:00-05:00", None),
    (WEEKEND, "2026-01-14T12:00-05:00", None),
    # The whole of Sunday 2026-11-01 (25 hours) and of Sunday 2026-03-08 (23 hours). 10-31 ann, 11-01 bob.
    (WEEKEND, "2026-11-01T01:30-04:00", "ann"),
    (WEEKEND, "2026-11-01T01:30-05:00", "ann"),
    (WEEKEND, "2026-11-01T23:59-05:00", "bob"),
    (WEEKEND, "2026-11-02T00:00-05:00", None),
    (WEEKEND, "2026-03-08T01:59-05:00", "cat"),  # 03-07 cat, 03-08 ann
    (WEEKEND, "2026-03-08T03:00-04:00", "cat"),
    (WEEKEND, "2026-03-08T23:59-04:00", "ann"),
    (WEEKEND, "2026-03-09T00:00-04:00", None),
    (WEEKEND, "2026-03-06T23:59-05:00", None),
    # Windows in the skipped hour of 2026-03-08 (07:00Z) and the repeated hour of 2026-11-01 (05:00Z-07:00Z).
    ("sun 02:00-03:00", "2026-03-08T01:59-05:00", None),
    ("sun 02:00-03:00", "2026-03-08T03:00-04:00", None),
    ("sun 02:30-04:00", "2026-03-08T01:59-05:00", None),
    ("sun 02:30-04:00", "2026-03-08T03:00-04:00", "cat"),
    ("sun 02:30-04:00", "2026-03-08T03:59-04:00", "cat"),
    ("sun 02:30-04:00", "2026-03-08T04:00-04:00", None),
    ("sun 01:00-02:30", "2026-03-08T01:59-05:00", "cat"),
    ("sun 01:00-02:30", "2026-03-08T03:00-04:00", None),
    ("sun 01:00-02:00", "2026-11-01T00:59-04:00", None),
    ("sun 01:00-02:00", "2026-11-01T01:00-04:00", "ann"),
    ("sun 01:00-02:00", "2026-11-01T01:59-05:00", "ann"),
    ("sun 01:00-02:00", "2026-11-01T02:00-05:00", None),
    ("sun 01:30-03:00", "2026-11-01T01:45-04:00", "ann"),
    ("sun 01:30-03:00", "2026-11-01T01:15-05:00", None),  # the clock went back out of the window
    ("sun 01:30-03:00", "2026-11-01T01:30-05:00", "ann"),
    ("sun 01:30-03:00", "2026-11-01T02:59-05:00", "ann"),
    ("sun 01:30-03:00", "2026-11-01T03:00-05:00", None),
    ("sat 22:00-02:30", "2026-03-08T01:59-05:00", "cat"),
    ("sat 22:00-02:30", "2026-03-08T03:00-04:00", None),
]


@pytest.mark.parametrize("window, instant, expected", RESTRICTED, ids=row_id)
def test_restricted_layer(window, instant, expected):
    sched = schedule("new_york", layer("daily", restrict=(window,)))
    assert on_call(sched, at(instant)) == who(expected)


def test_several_windows_any_one_covers():
    sched = schedule("new_york", layer("daily", restrict=("mon 09:00-10:00", "wed 09:00-10:00")))
    assert on_call(sched, at("2026-01-12T09:30-05:00")) == ("cat",)
    assert on_call(sched, at("2026-01-13T09:30-05:00")) == ()
    assert on_call(sched, at("2026-01-14T09:30-05:00")) == ("bob",)


# Layers stack. London, January 2026 (GMT). Lower: daily 09:00 from Monday 2026-01-05 (ann, bob):
# 01-05 ann, 01-06 bob, 01-07 ann, 01-08 bob, 01-09 ann, 01-10 bob, 01-11 ann, 01-12 bob.
# Upper: weekly Monday 09:00 (cat, dan), business hours only: week of 01-05 cat, of 01-12 dan.

STACKED = [
    ("2026-01-05T08:59+00:00", None, NOBODY),  # neither layer has started
    ("2026-01-05T09:00+00:00", "cat", "layers[1]"),
    ("2026-01-05T16:59+00:00", "cat", "layers[1]"),
    ("2026-01-05T17:00+00:00", "ann", "layers[0]"),
    ("2026-01-06T08:59+00:00", "ann", "layers[0]"),
    ("2026-01-06T09:00+00:00", "cat", "layers[1]"),
    ("2026-01-06T17:30+00:00", "bob", "layers[0]"),
    ("2026-01-09T16:59+00:00", "cat", "layers[1]"),
    ("2026-01-10T12:00+00:00", "bob", "layers[0]"),  # Saturday: the upper layer has no one
    ("2026-01-11T12:00+00:00", "ann", "layers[0]"),
    ("2026-01-12T08:30+00:00", "ann", "layers[0]"),
    ("2026-01-12T09:00+00:00", "dan", "layers[1]"),
    ("2026-01-12T17:00+00:00", "bob", "layers[0]"),
]


def stacked() -> Schedule:
    lower = layer("daily", "09:00", "2026-01-05", ("ann", "bob"))
    upper = layer("weekly", "monday 09:00", "2026-01-05", ("cat", "dan"), ("mon-fri 09:00-17:00",))
    return schedule("london", lower, upper)


@pytest.mark.parametrize("instant, expected, source", STACKED, ids=row_id)
def test_an_upper_layer_wins_where_it_has_someone(instant, expected, source):
    assert on_call(stacked(), at(instant)) == who(expected)
    [segment] = shifts(stacked(), at(instant), at(instant) + timedelta(seconds=1))
    assert (segment.person, segment.source) == (expected, source)


def test_an_upper_layer_without_restrictions_hides_the_lower_one():
    sched = schedule("kolkata", layer("daily", members=("ann",)), layer("daily", members=("bob",)))
    assert on_call(sched, at("2026-06-01T12:00+05:30")) == ("bob",)
    assert [s.source for s in shifts(sched, at("2026-06-01T00:00+05:30"), at("2026-06-03T00:00+05:30"))] == [
        "layers[1]"
    ]


def test_an_upper_layer_that_has_not_started_shows_the_lower_one():
    sched = schedule("kolkata", layer("daily", members=("ann",)), layer("daily", start="2026-02-01", members=("bob",)))
    assert on_call(sched, at("2026-01-31T12:00+05:30")) == ("ann",)
    assert on_call(sched, at("2026-02-01T08:59+05:30")) == ("ann",)
    assert on_call(sched, at("2026-02-01T09:00+05:30")) == ("bob",)


def test_a_layer_without_members_has_no_one():
    sched = schedule("kolkata", layer("daily", members=("ann",)), layer("daily", members=()))
    assert on_call(sched, at("2026-06-01T12:00+05:30")) == ("ann",)
    assert on_call(schedule("kolkata", layer("daily", members=())), at("2026-06-01T12:00+05:30")) == ()


# Overrides. New York, January 2026 (EST): daily 09:00 from 2026-01-01, so 01-09 cat, 01-10 ann, 01-11 bob.

OVERRIDES = (
    Override("dan", at("2026-01-10T12:00-05:00"), at("2026-01-11T12:00-05:00")),  # mid-shift to mid-shift
    Override("eve", at("2026-01-10T18:00-05:00"), at("2026-01-10T20:00-05:00")),  # starts later: wins
    Override("fay", at("2026-01-11T10:00-05:00"), at("2026-01-11T14:00-05:00")),  # outlasts dan's
    Override("gus", at("2026-01-10T17:00+00:00"), at("2026-01-10T18:00+00:00")),  # dan's start, listed later
)

OVERRIDDEN = [
    ("2026-01-10T08:59-05:00", "cat"),
    ("2026-01-10T11:59-05:00", "ann"),
    ("2026-01-10T12:00-05:00", "gus"),
    ("2026-01-10T12:59-05:00", "gus"),
    ("2026-01-10T13:00-05:00", "dan"),
    ("2026-01-10T17:59-05:00", "dan"),
    ("2026-01-10T18:00-05:00", "eve"),
    ("2026-01-10T19:59-05:00", "eve"),
    ("2026-01-10T20:00-05:00", "dan"),
    ("2026-01-11T08:59-05:00", "dan"),
    ("2026-01-11T09:30-05:00", "dan"),  # bob's shift has started; the override goes on
    ("2026-01-11T09:59-05:00", "dan"),
    ("2026-01-11T10:00-05:00", "fay"),
    ("2026-01-11T12:30-05:00", "fay"),
    ("2026-01-11T13:59-05:00", "fay"),
    ("2026-01-11T14:00-05:00", "bob"),
    ("2026-01-12T08:59-05:00", "bob"),
]


@pytest.mark.parametrize("instant, expected", OVERRIDDEN, ids=row_id)
def test_overrides(instant, expected):
    sched = schedule("new_york", layer("daily"), overrides=OVERRIDES)
    assert on_call(sched, at(instant)) == who(expected)


def test_overrides_timeline():
    sched = schedule("new_york", layer("daily"), overrides=OVERRIDES)
    timeline = shifts(sched, at("2026-01-10T00:00-05:00"), at("2026-01-12T00:00-05:00"))
    assert timeline == [
        Shift("cat", utc("2026-01-10T05:00"), utc("2026-01-10T14:00"), "layers[0]"),
        Shift("ann", utc("2026-01-10T14:00"), utc("2026-01-10T17:00"), "layers[0]"),
        Shift("gus", utc("2026-01-10T17:00"), utc("2026-01-10T18:00"), "overrides[3]"),
        Shift("dan", utc("2026-01-10T18:00"), utc("2026-01-10T23:00"), "overrides[0]"),
        Shift("eve", utc("2026-01-10T23:00"), utc("2026-01-11T01:00"), "overrides[1]"),
        Shift("dan", utc("2026-01-11T01:00"), utc("2026-01-11T15:00"), "overrides[0]"),
        Shift("fay", utc("2026-01-11T15:00"), utc("2026-01-11T19:00"), "overrides[2]"),
        Shift("bob", utc("2026-01-11T19:00"), utc("2026-01-12T05:00"), "layers[0]"),
    ]


def test_an_override_covers_no_one_gap_and_across_a_change():
    # A restricted layer with no one at night; the override lasts 2 real hours across 2026-03-08 07:00Z.
    sched = schedule(
        "new_york",
        layer("daily", restrict=("09:00-17:00",)),
        overrides=(Override("dan", at("2026-03-08T01:00-05:00"), at("2026-03-08T04:00-04:00")),),
    )
    assert on_call(sched, at("2026-03-08T00:59-05:00")) == ()
    assert on_call(sched, at("2026-03-08T01:00-05:00")) == ("dan",)
    assert on_call(sched, at("2026-03-08T03:59-04:00")) == ("dan",)
    assert on_call(sched, at("2026-03-08T04:00-04:00")) == ()
    assert shifts(sched, at("2026-03-08T00:00-05:00"), at("2026-03-08T10:00-04:00")) == [
        Shift(None, utc("2026-03-08T05:00"), utc("2026-03-08T06:00"), NOBODY),
        Shift("dan", utc("2026-03-08T06:00"), utc("2026-03-08T08:00"), "overrides[0]"),
        Shift(None, utc("2026-03-08T08:00"), utc("2026-03-08T13:00"), NOBODY),
        Shift("ann", utc("2026-03-08T13:00"), utc("2026-03-08T14:00"), "layers[0]"),  # 09:00 EDT, 03-08 ann
    ]


def test_an_override_for_the_person_on_call_is_its_own_shift():
    sched = schedule(
        "kolkata",
        layer("daily", members=("ann",)),
        overrides=(Override("ann", at("2026-02-01T12:00+05:30"), at("2026-02-01T13:00+05:30")),),
    )
    timeline = shifts(sched, at("2026-02-01T00:00+05:30"), at("2026-02-02T00:00+05:30"))
    assert [(s.person, s.source, s.end - s.start) for s in timeline] == [
        ("ann", "layers[0]", 12 * H),
        ("ann", "overrides[0]", H),
        ("ann", "layers[0]", 11 * H),
    ]


def test_an_override_before_a_layer_starts_and_an_empty_one():
    sched = schedule(
        "kolkata",
        layer("daily", start="2026-03-01"),
        overrides=(
            Override("dan", at("2026-02-01T00:00Z"), at("2026-02-02T00:00Z")),
            Override("eve", at("2026-02-03T00:00Z"), at("2026-02-03T00:00Z")),  # empty: covers nothing
        ),
    )
    assert on_call(sched, at("2026-02-01T12:00Z")) == ("dan",)
    assert on_call(sched, at("2026-02-03T00:00Z")) == ()


# The timeline.


def test_timeline_of_a_week_with_a_change_new_york_daily():
    # 03-04 cat (k 62), 03-05 ann, 03-06 bob, 03-07 cat, 03-08 ann, 03-09 bob, 03-10 cat, 03-11 ann.
    timeline = shifts(schedule("new_york", layer("daily")), at("2026-03-05T00:00-05:00"), at("2026-03-12T00:00-04:00"))
    assert timeline == [
        Shift("cat", utc("2026-03-05T05:00"), utc("2026-03-05T14:00"), "layers[0]"),
        Shift("ann", utc("2026-03-05T14:00"), utc("2026-03-06T14:00"), "layers[0]"),
        Shift("bob", utc("2026-03-06T14:00"), utc("2026-03-07T14:00"), "layers[0]"),
        Shift("cat", utc("2026-03-07T14:00"), utc("2026-03-08T13:00"), "layers[0]"),
        Shift("ann", utc("2026-03-08T13:00"), utc("2026-03-09T13:00"), "layers[0]"),
        Shift("bob", utc("2026-03-09T13:00"), utc("2026-03-10T13:00"), "layers[0]"),
        Shift("cat", utc("2026-03-10T13:00"), utc("2026-03-11T13:00"), "layers[0]"),
        Shift("ann", utc("2026-03-11T13:00"), utc("2026-03-12T04:00"), "layers[0]"),
    ]
    assert all(s.start.tzinfo is UTC and s.end.tzinfo is UTC for s in timeline)


def test_timeline_of_a_week_with_a_change_london_weekly():
    # 10-19 cat (k 41) until Monday 10-26 09:00 GMT, then ann (42).
    sched = schedule("london", layer("weekly", "monday 09:00"))
    assert shifts(sched, at("2026-10-22T00:00+01:00"), at("2026-10-29T00:00+00:00")) == [
        Shift("cat", utc("2026-10-21T23:00"), utc("2026-10-26T09:00"), "layers[0]"),
        Shift("ann", utc("2026-10-26T09:00"), utc("2026-10-29T00:00"), "layers[0]"),
    ]


def test_timeline_of_a_change_sydney_every_12h():
    # 04-04 day ann (186) from 08:00 AEDT, night bob (187) for 13h, 04-05 day cat (188), night ann (189).
    sched = schedule("sydney", layer("12h", "08:00"))
    assert shifts(sched, at("2026-04-04T08:00+11:00"), at("2026-04-06T08:00+10:00")) == [
        Shift("ann", utc("2026-04-03T21:00"), utc("2026-04-04T09:00"), "layers[0]"),
        Shift("bob", utc("2026-04-04T09:00"), utc("2026-04-04T22:00"), "layers[0]"),
        Shift("cat", utc("2026-04-04T22:00"), utc("2026-04-05T10:00"), "layers[0]"),
        Shift("ann", utc("2026-04-05T10:00"), utc("2026-04-05T22:00"), "layers[0]"),
    ]


def test_timeline_of_the_weekend_window_across_both_changes():
    sched = schedule("new_york", layer("daily", members=("ann",), restrict=(WEEKEND,)))
    # Saturday 00:00 EDT to Monday 00:00 EST: 49 hours.
    assert shifts(sched, at("2026-10-30T00:00-04:00"), at("2026-11-03T00:00-05:00")) == [
        Shift(None, utc("2026-10-30T04:00"), utc("2026-10-31T04:00"), NOBODY),
        Shift("ann", utc("2026-10-31T04:00"), utc("2026-11-02T05:00"), "layers[0]"),
        Shift(None, utc("2026-11-02T05:00"), utc("2026-11-03T05:00"), NOBODY),
    ]
    # Saturday 00:00 EST to Monday 00:00 EDT: 47 hours.
    assert shifts(sched, at("2026-03-06T00:00-05:00"), at("2026-03-10T00:00-04:00")) == [
        Shift(None, utc("2026-03-06T05:00"), utc("2026-03-07T05:00"), NOBODY),
        Shift("ann", utc("2026-03-07T05:00"), utc("2026-03-09T04:00"), "layers[0]"),
        Shift(None, utc("2026-03-09T04:00"), utc("2026-03-10T04:00"), NOBODY),
    ]


# New York, 00:00 to 12:00 local on the days the clocks change.
FORWARD = ("2026-03-08T00:00-05:00", "2026-03-08T12:00-04:00")  # 02:00 EST -> 03:00 EDT at 07:00Z
BACK = ("2026-11-01T00:00-04:00", "2026-11-01T12:00-05:00")  # 02:00 EDT -> 01:00 EST at 06:00Z


@pytest.mark.parametrize(
    "window, day, covered",
    [
        ("sun 02:30-04:00", FORWARD, [("07:00", "08:00")]),
        ("sun 02:00-03:00", FORWARD, []),
        ("sun 01:00-02:30", FORWARD, [("06:00", "07:00")]),
        ("sat 22:00-02:30", FORWARD, [("05:00", "07:00")]),
        ("sun 01:59-03:01", FORWARD, [("06:59", "07:01")]),
        ("sun 00:00-24:00", FORWARD, [("05:00", "16:00")]),
        ("sun 01:00-02:00", BACK, [("05:00", "07:00")]),  # 01:00-02:00 EDT, then 01:00-02:00 EST
        ("sun 01:30-03:00", BACK, [("05:30", "06:00"), ("06:30", "08:00")]),
        ("sun 00:30-01:30", BACK, [("04:30", "05:30"), ("06:00", "06:30")]),
        ("sun 02:00-02:30", BACK, [("07:00", "07:30")]),
        ("sun 00:00-24:00", BACK, [("04:00", "17:00")]),
    ],
    ids=row_id,
)
def test_timeline_of_windows_at_the_changes(window, day, covered):
    """Single-member layers, so only the window shapes the timeline; times are UTC, the change's date."""
    sched = schedule("new_york", layer("daily", members=("ann",), restrict=(window,)))
    start, end = at(day[0]), at(day[1])
    timeline = shifts(sched, start, end)
    assert [(f"{s.start:%H:%M}", f"{s.end:%H:%M}") for s in timeline if s.person == "ann"] == covered
    assert all(s.start.date() == start.date() for s in timeline)
    assert timeline[0].start == start and timeline[-1].end == end
    assert all(a.end == b.start for a, b in itertools.pairwise(timeline))


def test_timeline_merges_the_same_person_and_clips():
    sched = schedule("kolkata", layer("daily", members=("ann", "ann", "bob")))
    # 2026-01-01 ann, 01-02 ann, 01-03 bob, 01-04 ann ...: ann's two shifts are one.
    assert shifts(sched, at("2026-01-01T12:00+05:30"), at("2026-01-04T10:00+05:30")) == [
        Shift("ann", utc("2026-01-01T06:30"), utc("2026-01-03T03:30"), "layers[0]"),
        Shift("bob", utc("2026-01-03T03:30"), utc("2026-01-04T03:30"), "layers[0]"),
        Shift("ann", utc("2026-01-04T03:30"), utc("2026-01-04T04:30"), "layers[0]"),
    ]
    one = schedule("london", layer("weekly", "monday 09:00", members=("ann",)))
    assert shifts(one, at("2026-03-01T00:00Z"), at("2026-11-01T00:00Z")) == [
        Shift("ann", utc("2026-03-01T00:00"), utc("2026-11-01T00:00"), "layers[0]")
    ]


def test_timeline_before_the_first_handoff_and_of_nothing():
    sched = schedule("kolkata", layer("daily"))
    assert shifts(sched, at("2025-12-31T00:00+05:30"), at("2026-01-01T10:00+05:30")) == [
        Shift(None, utc("2025-12-30T18:30"), utc("2026-01-01T03:30"), NOBODY),
        Shift("ann", utc("2026-01-01T03:30"), utc("2026-01-01T04:30"), "layers[0]"),
    ]
    empty = Schedule("empty", ZONES["london"])
    assert shifts(empty, at("2026-01-01T00:00Z"), at("2026-01-02T00:00Z")) == [
        Shift(None, utc("2026-01-01T00:00"), utc("2026-01-02T00:00"), NOBODY)
    ]
    assert shifts(sched, at("2026-01-02T00:00Z"), at("2026-01-02T00:00Z")) == []
    assert shifts(sched, at("2026-01-02T00:00Z"), at("2026-01-01T00:00Z")) == []


def test_naive_instants_are_refused():
    sched = schedule("kolkata", layer("daily"))
    with pytest.raises(ValueError, match="instant 2026-01-01T12:00:00 has no time zone"):
        on_call(sched, datetime(2026, 1, 1, 12))
    with pytest.raises(ValueError, match="start 2026-01-01T12:00:00 has no time zone"):
        shifts(sched, datetime(2026, 1, 1, 12), at("2026-01-02T00:00Z"))


def test_a_rotation_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match="rotation 'monthly': expected 'daily', 'weekly' or a timedelta"):
        on_call(schedule("kolkata", dataclasses.replace(layer(), rotation="monthly")), at("2026-02-01T00:00Z"))


# Far from the start, in any order: arithmetic, not iteration.

FAR = [
    # 2026-01-01 to 2076-01-01 is 50 * 365 + 12 leap days = 18262 days (a Wednesday); 18262 % 3 == 1.
    ("daily", "09:00", "2076-01-01T08:59-05:00", "ann"),
    ("daily", "09:00", "2076-01-01T09:01-05:00", "bob"),
    # 2076-07-01 is 18262 + 182 days, k % 3 == 0; EDT.
    ("daily", "09:00", "2076-07-01T09:01-04:00", "ann"),
    ("daily", "09:00", "2076-07-01T08:59-04:00", "cat"),
    # Monday 2076-01-06 is 18263 days (2609 weeks) after Monday 2026-01-05: 2609 % 3 == 2.
    ("weekly", "monday 09:00", "2076-01-06T09:01-05:00", "cat"),
    ("weekly", "monday 09:00", "2076-01-06T08:59-05:00", "bob"),
    # every 12h from 08:00: 2076-01-01 08:00 starts shift 2 * 18262 = 36524, % 3 == 2.
    ("12h", "08:00", "2076-01-01T08:01-05:00", "cat"),
    ("12h", "08:00", "2076-01-01T07:59-05:00", "bob"),
    ("12h", "08:00", "2076-07-01T08:01-04:00", "ann"),  # 2 * 18444 = 36888, % 3 == 0
]


@pytest.mark.parametrize("kind, handoff, instant, expected", FAR, ids=row_id)
def test_far_from_the_start(kind, handoff, instant, expected):
    assert on_call(schedule("new_york", layer(kind, handoff)), at(instant)) == who(expected)


def test_on_call_far_from_the_start_is_quick():
    sched = schedule("new_york", layer("daily"), layer("weekly", "monday 09:00"), layer("8h", "06:00"))
    instants = [at("2076-03-08T00:00-05:00") + timedelta(minutes=7 * i) for i in range(300)]
    began = clock.perf_counter()
    for instant in instants:
        on_call(sched, instant)
    # About 20 microseconds each; walking the 55,000 shifts of 50 years would take seconds.
    assert clock.perf_counter() - began < 1.0


# The timeline against `on_call`, and `on_call` against handoffs listed one by one.


def busy(zone: str) -> Schedule:
    """Stacked layers, windows across midnight and across the changes, overlapping overrides."""
    tz = ZONES[zone]
    return schedule(
        zone,
        layer("daily", "09:00", "2025-12-20"),
        layer("weekly", "monday 09:00", "2026-01-01", ("dan", "eve"), (NIGHTS,)),
        layer("8h", "06:00", "2026-02-01", ("fay", "gus", "hal", "ivy"), (WEEKEND,)),
        layer("daily", "01:30", "2026-01-01", ("jay", "kim"), ("sun 01:30-03:00", "sun 02:30-02:45")),
        overrides=(
            # They start or end near the changes without hiding all of the windows there.
            Override("zed", datetime(2026, 3, 7, 12, tzinfo=tz), datetime(2026, 3, 8, 1, 45, tzinfo=tz)),
            Override("yan", datetime(2026, 3, 8, 1, tzinfo=tz), datetime(2026, 3, 8, 1, 40, tzinfo=tz)),
            Override("xia", datetime(2026, 10, 24, 22, tzinfo=tz), datetime(2026, 10, 25, 1, 15, tzinfo=tz)),
            Override("wes", datetime(2026, 10, 25, 1, 40, tzinfo=tz, fold=1), datetime(2026, 11, 1, 1, 20, tzinfo=tz)),
            Override("vic", utc("2026-04-04T15:00"), utc("2026-04-04T17:00")),
        ),
    )


CHANGES = {  # the 2026 changes, in UTC
    "new_york": ("2026-03-08T07:00", "2026-11-01T06:00"),
    "london": ("2026-03-29T01:00", "2026-10-25T01:00"),
    "sydney": ("2026-04-04T16:00", "2026-10-03T16:00"),
}


@pytest.mark.parametrize("zone", list(ZONES))
def test_on_call_agrees_with_shifts(zone):
    sched = busy(zone)
    start, end = at("2026-01-01T00:00Z"), at("2027-01-01T00:00Z")
    timeline = shifts(sched, start, end)
    assert timeline[0].start == start and timeline[-1].end == end
    for a, b in itertools.pairwise(timeline):
        assert a.end == b.start and a.start < a.end
        assert (a.person, a.source) != (b.person, b.source)
    starts = [s.start for s in timeline]
    rng = random.Random(20260308)
    instants = [start + timedelta(seconds=rng.randrange(365 * 86400)) for _ in range(2000)]
    for change in CHANGES.get(zone, ()):  # and 250 within a day and a half of each change
        instants += [utc(change) + timedelta(seconds=rng.randrange(-129600, 129600)) for _ in range(250)]
    for instant in instants:
        segment = timeline[bisect.bisect_right(starts, instant) - 1]
        assert on_call(sched, instant) == who(segment.person), instant
    for segment in timeline:
        assert on_call(sched, segment.start) == who(segment.person)
        assert on_call(sched, segment.end - timedelta(microseconds=1)) == who(segment.person)


def walked_handoffs(kind: str, handoff: time, first_day: date, zone: ZoneInfo, until: date) -> list[datetime]:
    """Every handoff by walking the wall clock step by step, one conversion each (the rules, naively)."""
    step = {"daily": timedelta(days=1), "weekly": timedelta(weeks=1)}.get(kind) or parse_every(kind)
    local, found = datetime.combine(first_day, handoff), []
    while local.date() < until:
        found.append(local.replace(tzinfo=zone).astimezone(UTC))
        local += step
    return found


@pytest.mark.parametrize("zone", list(ZONES))
@pytest.mark.parametrize(
    "kind, handoff, first_day",
    [
        ("daily", "09:00", "2026-01-01"),
        ("weekly", "monday 09:00", "2026-01-05"),
        ("12h", "08:00", "2026-01-01"),
        ("8h", "06:00", "2026-01-01"),
        ("daily", "01:30", "2026-01-01"),
        ("7h", "02:30", "2026-01-01"),
    ],
)
def test_on_call_agrees_with_handoffs_walked_one_by_one(zone, kind, handoff, first_day):
    members = ("ann", "bob", "cat", "dan", "eve")
    sched = schedule(zone, layer(kind, handoff, "2026-01-01", members))
    handoffs = walked_handoffs(
        kind, parse_handoff(handoff).at, date.fromisoformat(first_day), ZONES[zone], date(2027, 1, 2)
    )
    rng = random.Random(1)
    for _ in range(300):
        instant = utc("2026-01-01T00:00") + timedelta(seconds=rng.randrange(365 * 86400))
        k = bisect.bisect_right(handoffs, instant) - 1
        assert on_call(sched, instant) == (() if k < 0 else (members[k % 5],)), instant
    for k, handoff_at in enumerate(handoffs[:-1]):
        if handoff_at < handoffs[k + 1]:
            assert on_call(sched, handoff_at) == (members[k % 5],)


# What a configuration check refuses.

CLOCKS = {"new_york": "(clocks go from 02:00 to 03:00)", "london": "(clocks go from 01:00 to 02:00)"}
CLOCKS["sydney"] = CLOCKS["new_york"]

SKIPPED_HANDOFFS = [
    # zone, rotation, handoff, layer start, since, years, the first day the handoff is skipped (or None)
    ("new_york", "daily", "02:30", "2026-01-01", None, 2, "2026-03-08"),
    ("new_york", "daily", "02:00", "2026-01-01", None, 2, "2026-03-08"),
    ("new_york", "daily", "02:59", "2026-01-01", None, 2, "2026-03-08"),
    ("new_york", "daily", "01:59", "2026-01-01", None, 2, None),
    ("new_york", "daily", "03:00", "2026-01-01", None, 2, None),
    ("new_york", "daily", "01:30", "2026-01-01", None, 2, None),  # twice in November: the first one
    ("new_york", "daily", "02:30", "2026-03-08", None, 2, "2026-03-08"),
    ("new_york", "daily", "02:30", "2026-03-09", None, 2, "2027-03-14"),
    ("new_york", "daily", "02:30", "2026-03-09", None, 1, None),  # 2027-03-14 is after 2027-03-09
    ("new_york", "daily", "02:30", "2026-03-09", None, 3, "2027-03-14"),
    ("new_york", "daily", "02:30", "2026-01-01", "2026-06-01", 2, "2027-03-14"),
    ("new_york", "daily", "02:30", "2026-01-01", "2025-06-01", 2, "2026-03-08"),  # the layer starts later
    ("new_york", "daily", "02:30", "2026-01-01", "2026-06-01", 0, None),
    ("new_york", "weekly", "monday 02:30", "2026-01-01", None, 2, None),  # the clocks change on Sundays
    ("new_york", "weekly", "saturday 02:30", "2026-01-01", None, 2, None),
    ("new_york", "weekly", "sunday 02:30", "2026-01-01", None, 2, "2026-03-08"),
    ("new_york", "weekly", "sun 02:30", "2026-03-09", None, 2, "2027-03-14"),
    ("new_york", "weekly", "02:30", "2026-03-01", None, 2, "2026-03-08"),  # no weekday: the start's, Sunday
    ("new_york", "weekly", "02:30", "2026-03-02", None, 2, None),  # Mondays
    ("london", "daily", "01:30", "2026-01-01", None, 2, "2026-03-29"),
    ("london", "daily", "01:00", "2026-01-01", None, 2, "2026-03-29"),
    ("london", "daily", "02:30", "2026-01-01", None, 2, None),
    ("london", "daily", "00:59", "2026-01-01", None, 2, None),
    ("london", "daily", "01:30", "2026-03-30", None, 2, "2027-03-28"),
    ("london", "weekly", "sunday 01:00", "2026-01-01", None, 2, "2026-03-29"),
    ("london", "weekly", "monday 01:30", "2026-01-01", None, 2, None),
    ("sydney", "daily", "02:30", "2026-01-01", None, 2, "2026-10-04"),
    ("sydney", "daily", "02:30", "2026-10-05", None, 2, "2027-10-03"),
    ("sydney", "daily", "02:30", "2026-01-01", None, 0, None),
    ("sydney", "weekly", "sunday 02:00", "2026-01-01", None, 2, "2026-10-04"),
    ("sydney", "weekly", "friday 02:30", "2026-01-01", None, 2, None),
    ("sydney", "daily", "03:00", "2026-01-01", None, 2, None),
    ("sydney", "daily", "02:30", "2026-04-06", None, 1, "2026-10-04"),  # April is the other way
    ("kolkata", "daily", "02:30", "2026-01-01", None, 2, None),
    ("kolkata", "weekly", "sunday 02:30", "2026-01-01", None, 2, None),
    ("kolkata", "1h", "00:00", "2026-01-01", None, 2, None),
    ("kolkata", "1h", "00:30", "2026-01-01", None, 10, None),
]


@pytest.mark.parametrize("zone, kind, handoff, start, since, years, day", SKIPPED_HANDOFFS, ids=row_id)
def test_problems_a_handoff_the_clock_skips(zone, kind, handoff, start, since, years, day):
    sched = schedule(zone, layer(kind, handoff, start))
    found = problems(sched, years=years, since=None if since is None else date.fromisoformat(since))
    shown = handoff.split()[-1]
    zone_name = ZONES[zone].key
    message = f"{shown} does not exist in {zone_name} on {day} {CLOCKS.get(zone)}; choose a time outside that hour"
    assert found == ([] if day is None else [f"layers[0].handoff: {message}"])


def test_problems_the_message_in_full():
    assert problems(schedule("new_york", layer("daily", "02:30", "2026-06-01"))) == [
        "layers[0].handoff: 02:30 does not exist in America/New_York on 2027-03-14 (clocks go from 02:00 to 03:00); "
        "choose a time outside that hour"
    ]
    assert problems(schedule("london", layer("weekly", "sunday 01:30"))) == [
        "layers[0].handoff: 01:30 does not exist in Europe/London on 2026-03-29 (clocks go from 01:00 to 02:00); "
        "choose a time outside that hour"
    ]


@pytest.mark.parametrize(
    "zone, kind, handoff, start, expected",
    [
        ("new_york", "12h", "14:30", "2026-01-01", "02:30 on 2026-03-08 (every 12h from 2026-01-01 14:30)"),
        ("new_york", "1h", "00:00", "2026-03-08", "02:00 on 2026-03-08 (every 1h from 2026-03-08 00:00)"),
        # 2027-03-14 is 10488h in, 3 more than a multiple of 5: a handoff at 02:00 (2026-03-08, 1584h in: 01:00, 06:00)
        ("new_york", "5h", "00:00", "2026-01-01", "02:00 on 2027-03-14 (every 5h from 2026-01-01 00:00)"),
        ("london", "1d", "01:30", "2026-01-01", "01:30 on 2026-03-29 (every 1d from 2026-01-01 01:30)"),
        ("sydney", "8h", "10:30", "2026-01-01", "02:30 on 2026-10-04 (every 8h from 2026-01-01 10:30)"),
        ("new_york", "8h", "06:00", "2026-01-01", None),
        ("new_york", "1h30m", "00:00", "2026-03-08", None),  # 00:00, 01:30, then 03:00 EDT
        ("new_york", "7h", "00:00", "2026-01-01", None),  # 2026-03-08 is 66 days in: 02:00 + 7h steps skip it
    ],
    ids=row_id,
)
def test_problems_an_every_the_clock_skips(zone, kind, handoff, start, expected):
    found = problems(schedule(zone, layer(kind, handoff, start)))
    if expected is None:
        assert found == []
    else:
        assert found == [
            f"layers[0].handoff: the handoff due at {expected} does not exist in {ZONES[zone].key} "
            f"{CLOCKS[zone]}; choose a handoff time or an every that avoids that hour"
        ]


def test_problems_a_half_hour_change():
    # Lord Howe Island moves its clocks by 30 minutes: 02:00 -> 02:30 on 2026-10-04.
    sched = Schedule("x", ZoneInfo("Australia/Lord_Howe"), (layer("daily", "02:15"), layer("daily", "02:30")))
    assert problems(sched) == [
        "layers[0].handoff: 02:15 does not exist in Australia/Lord_Howe on 2026-10-04 "
        "(clocks go from 02:00 to 02:30); choose a time outside 02:00-02:30"
    ]


def with_(changes: dict) -> Layer:
    return dataclasses.replace(layer(), **changes)


WEEKDAY_ALONE = "layers[0].handoff: a weekday only applies to a weekly rotation: give the time alone, such as 09:00"
EMPTY_WINDOW = "09:00-09:00 is empty (it ends when it starts); for a whole day write 00:00-24:00"

LAYER_PROBLEMS = [
    ("no members", layer(members=()), ["layers[0].members: no one: a layer needs at least one person"]),
    ("empty member", layer(members=("ann", "")), ["layers[0].members[1]: empty: name a person"]),
    ("monthly", with_({"rotation": "monthly"}),
     ["layers[0].rotation: 'monthly' is not daily or weekly (or a custom every)"]),
    ("every 30m", with_({"rotation": timedelta(minutes=30)}), ["layers[0].every: 30m is not from 1h to 28 days"]),
    ("every 29d", with_({"rotation": timedelta(days=29)}), ["layers[0].every: 29d is not from 1h to 28 days"]),
    ("every 0", with_({"rotation": timedelta(0)}), ["layers[0].every: 0m is not from 1h to 28 days"]),
    ("every 1h", with_({"rotation": timedelta(hours=1)}), []),
    ("every 28d", with_({"rotation": timedelta(days=28)}), []),
    ("daily with a day", layer("daily", "monday 09:00"), [WEEKDAY_ALONE]),
    ("every with a day", layer("12h", "monday 09:00"), [WEEKDAY_ALONE]),
    ("day 7", with_({"rotation": "weekly", "handoff": Handoff(time(9), 7)}),
     ["layers[0].handoff: day 7 is not 0 (Monday) to 6 (Sunday)"]),
    ("a window", layer(restrict=("mon 09:00-17:00",)), []),
    ("empty window", with_({"restrict": (Window(EVERY_DAY, time(9), time(9)),)}),
     [f"layers[0].restrict[0]: {EMPTY_WINDOW}"]),
    ("no days", with_({"restrict": (Window((), time(9), time(17)),)}),
     ["layers[0].restrict[0]: no days: leave the days out for every day"]),
    ("day 7 window", with_({"restrict": (Window((1, 7), time(9), time(17)),)}),
     ["layers[0].restrict[0]: days [1, 7] are not all 0 (Monday) to 6 (Sunday)"]),
    ("24:00", with_({"restrict": (Window((5,), time(0), None),)}), []),
    ("night", with_({"restrict": (Window((5,), time(18), time(8)),)}), []),
    ("second window", with_({"restrict": (Window((5,), time(18), time(8)), Window((1,), time(9), time(9)))}),
     [f"layers[0].restrict[1]: {EMPTY_WINDOW}"]),
]  # fmt: skip


@pytest.mark.parametrize("name, bad_layer, expected", LAYER_PROBLEMS, ids=[row[0] for row in LAYER_PROBLEMS])
def test_problems_of_a_layer(name, bad_layer, expected):
    assert problems(schedule("kolkata", bad_layer)) == expected


OVERRIDE_PROBLEMS = [
    ("fine", Override("ann", at("2026-01-01T10:00Z"), at("2026-01-01T12:00Z")), []),
    ("empty", Override("ann", at("2026-01-01T12:00Z"), at("2026-01-01T12:00Z")),
     ["overrides[0].end: 2026-01-01T12:00:00+00:00 is not after the start, 2026-01-01T12:00:00+00:00"]),
    ("earlier", Override("ann", at("2026-01-01T12:00+00:00"), at("2026-01-01T12:30+01:00")),
     ["overrides[0].end: 2026-01-01T12:30:00+01:00 is not after the start, 2026-01-01T12:00:00+00:00"]),
    ("naive start", Override("ann", datetime(2026, 1, 1, 12), at("2026-01-01T14:00Z")),
     ["overrides[0].start: 2026-01-01T12:00:00 has no time zone: add one, such as Z or +01:00"]),
    ("naive end", Override("ann", at("2026-01-01T12:00Z"), datetime(2026, 1, 1, 14)),
     ["overrides[0].end: 2026-01-01T14:00:00 has no time zone: add one, such as Z or +01:00"]),
    ("no person", Override("", at("2026-01-01T10:00Z"), at("2026-01-01T12:00Z")),
     ["overrides[0].person: empty: name a person"]),
]  # fmt: skip


@pytest.mark.parametrize("name, override, expected", OVERRIDE_PROBLEMS, ids=[row[0] for row in OVERRIDE_PROBLEMS])
def test_problems_of_an_override(name, override, expected):
    assert problems(schedule("kolkata", layer(), overrides=(override,))) == expected


def test_problems_all_at_once_in_order():
    sched = schedule(
        "new_york",
        layer("daily", "02:30"),
        layer("weekly", "monday 09:00", members=()),
        overrides=(Override("ann", at("2026-01-02T00:00Z"), at("2026-01-01T00:00Z")),),
    )
    assert problems(sched) == [
        "layers[0].handoff: 02:30 does not exist in America/New_York on 2026-03-08 (clocks go from 02:00 to 03:00); "
        "choose a time outside that hour",
        "layers[1].members: no one: a layer needs at least one person",
        "overrides[0].end: 2026-01-01T00:00:00+00:00 is not after the start, 2026-01-02T00:00:00+00:00",
    ]
    assert problems(Schedule("empty", ZONES["london"])) == []


# Windows on the wall clock.

COVERS = [
    ("mon-fri 09:00-17:00", "2026-01-12 09:00", True),  # Monday
    ("mon-fri 09:00-17:00", "2026-01-12 08:59", False),
    ("mon-fri 09:00-17:00", "2026-01-12 16:59:59", True),
    ("mon-fri 09:00-17:00", "2026-01-12 17:00", False),
    ("mon-fri 09:00-17:00", "2026-01-16 12:00", True),  # Friday
    ("mon-fri 09:00-17:00", "2026-01-17 12:00", False),  # Saturday
    ("mon-fri 18:00-08:00", "2026-01-12 18:00", True),
    ("mon-fri 18:00-08:00", "2026-01-13 07:59", True),
    ("mon-fri 18:00-08:00", "2026-01-13 08:00", False),
    ("mon-fri 18:00-08:00", "2026-01-12 07:59", False),  # Sunday has no night
    ("mon-fri 18:00-08:00", "2026-01-17 07:59", True),  # Friday's night
    ("mon-fri 18:00-08:00", "2026-01-17 18:00", False),
    ("fri 22:00-06:00", "2026-01-16 22:00", True),
    ("fri 22:00-06:00", "2026-01-17 05:59", True),
    ("fri 22:00-06:00", "2026-01-17 06:00", False),
    ("fri 22:00-06:00", "2026-01-16 05:59", False),  # Thursday's night is not Friday's
    ("fri 22:00-06:00", "2026-01-17 22:00", False),
    ("sat-sun 00:00-24:00", "2026-01-17 00:00", True),
    ("sat-sun 00:00-24:00", "2026-01-18 23:59:59.999999", True),
    ("sat-sun 00:00-24:00", "2026-01-19 00:00", False),
    ("sat-sun 00:00-24:00", "2026-01-16 23:59", False),
    ("fri-mon 12:00-13:00", "2026-01-19 12:30", True),  # Monday
    ("fri-mon 12:00-13:00", "2026-01-18 12:30", True),  # Sunday
    ("fri-mon 12:00-13:00", "2026-01-13 12:30", False),  # Tuesday
    ("sun 23:00-01:00", "2026-01-19 00:30", True),  # Monday 00:30 is Sunday's night
    ("sun 23:00-01:00", "2026-01-18 00:30", False),
    ("00:00-24:00", "2026-01-14 03:00", True),
    ("22:00-24:00", "2026-01-14 23:59", True),
    ("22:00-24:00", "2026-01-15 00:00", False),
    ("22:00-24:00", "2026-01-14 21:59", False),
    ("00:00-00:30", "2026-01-14 00:29", True),
    ("23:30-00:00", "2026-01-14 23:45", True),
    ("23:30-00:00", "2026-01-15 00:00", False),
]


@pytest.mark.parametrize("window, local, expected", COVERS, ids=row_id)
def test_window_covers(window, local, expected):
    assert parse_window(window).covers(datetime.fromisoformat(local)) is expected


def test_an_empty_window_covers_nothing():
    window = Window(EVERY_DAY, time(9), time(9))
    assert not any(window.covers(datetime(2026, 1, 12, h, m)) for h in range(24) for m in (0, 30))


# The text forms.

WINDOWS = [
    ("mon-fri 09:00-17:00", (0, 1, 2, 3, 4), time(9), time(17)),
    ("MON-FRI 09:00-17:00", (0, 1, 2, 3, 4), time(9), time(17)),
    ("Monday-Friday 09:00-17:00", (0, 1, 2, 3, 4), time(9), time(17)),
    ("  mon-fri   09:00 - 17:00  ", (0, 1, 2, 3, 4), time(9), time(17)),
    ("mon 09:00-17:00", (0,), time(9), time(17)),
    ("sunday 09:00-17:00", (6,), time(9), time(17)),
    ("fri-mon 09:00-17:00", (0, 4, 5, 6), time(9), time(17)),
    ("sun-mon 09:00-17:00", (0, 6), time(9), time(17)),
    ("sat-sun 00:00-24:00", (5, 6), time(0), None),
    ("mon,wed,fri 09:00-17:00", (0, 2, 4), time(9), time(17)),
    ("mon, wed, fri 09:00-17:00", (0, 2, 4), time(9), time(17)),
    ("fri,mon,wed 09:00-17:00", (0, 2, 4), time(9), time(17)),
    ("mon-wed,fri 09:00-17:00", (0, 1, 2, 4), time(9), time(17)),
    ("mon-tue,mon-tue 09:00-17:00", (0, 1), time(9), time(17)),
    ("wed-wed 09:00-17:00", (2,), time(9), time(17)),
    ("tue-mon 09:00-17:00", EVERY_DAY, time(9), time(17)),
    ("mon-fri 18:00-08:00", (0, 1, 2, 3, 4), time(18), time(8)),
    ("18:00-08:00", EVERY_DAY, time(18), time(8)),
    ("00:00-24:00", EVERY_DAY, time(0), None),
    ("9:00-17:30", EVERY_DAY, time(9), time(17, 30)),
    ("23:59-00:00", EVERY_DAY, time(23, 59), time(0)),
    ("00:00-00:01", EVERY_DAY, time(0), time(0, 1)),
]


@pytest.mark.parametrize("text, days, start, end", WINDOWS, ids=row_id)
def test_parse_window(text, days, start, end):
    assert parse_window(text) == Window(days, start, end)


BAD_WINDOWS = [
    ("", "empty: expected days (optional) and a time range, such as 'mon-fri 09:00-17:00', "
         "'sat-sun 00:00-24:00' or '18:00-08:00'"),
    ("   ", "empty: expected days"),
    ("mon-fri", "'mon-fri' has no time range: expected days (optional) and HH:MM-HH:MM, such as 'mon-fri 09:00-17:00'"),
    ("weekdays", "'weekdays' has no time range"),
    ("mon-fri 9-17", "'mon-fri 9-17' has no time range: expected days (optional) and HH:MM-HH:MM"),
    ("mon-fri 09:00", "'mon-fri 09:00' is not a restriction"),
    ("mon-fri 09:00-17:00-18:00", "is not a restriction"),
    ("mon-fri 0900-1700", "has no time range"),
    ("funday 09:00-17:00", "'funday' is not a day: expected mon, tue, wed, thu, fri, sat or sun, or the full name"),
    ("mo-fr 09:00-17:00", "'mo' is not a day"),
    ("tues 09:00-17:00", "'tues' is not a day"),
    ("mon fri 09:00-17:00", "'mon fri' is not a day"),
    ("mon,,fri 09:00-17:00", "'mon,,fri' is not a list of days: expected such as mon-fri or mon,wed,fri"),
    ("mon- 09:00-17:00", "'mon-' is not a list of days"),
    ("-fri 09:00-17:00", "'-fri' is not a list of days"),
    ("mon-tue-wed 09:00-17:00", "'tue-wed' is not a day"),
    ("mon 17:00-17:00", "17:00-17:00 is empty (it ends when it starts): for a whole day write 00:00-24:00"),
    ("00:00-00:00", "00:00-00:00 is empty"),
    ("24:00-08:00", "24:00 can only end a window: start at 00:00"),
    ("mon 25:00-26:00", "25:00: hours go from 00 to 23 (24:00 only ends a window)"),
    ("mon 09:00-24:30", "24:30: hours go from 00 to 23"),
    ("mon 09:60-10:00", "09:60: minutes go from 00 to 59"),
    ("mon 09:00-123:00", "is not a restriction"),
]  # fmt: skip


@pytest.mark.parametrize("text, message", BAD_WINDOWS, ids=row_id)
def test_parse_window_refuses(text, message):
    with pytest.raises(ValueError) as raised:
        parse_window(text)
    assert str(raised.value).startswith(message) or message in str(raised.value)


HANDOFFS = [
    ("09:00", Handoff(time(9))),
    ("9:00", Handoff(time(9))),
    (" 09:30 ", Handoff(time(9, 30))),
    ("00:00", Handoff(time(0))),
    ("23:59", Handoff(time(23, 59))),
    ("monday 09:00", Handoff(time(9), 0)),
    ("Monday 09:00", Handoff(time(9), 0)),
    ("MON 09:00", Handoff(time(9), 0)),
    ("tue 09:00", Handoff(time(9), 1)),
    ("wednesday 09:00", Handoff(time(9), 2)),
    ("thu 09:00", Handoff(time(9), 3)),
    ("Friday 17:30", Handoff(time(17, 30), 4)),
    ("sat 00:00", Handoff(time(0), 5)),
    ("sunday   23:00", Handoff(time(23), 6)),
]


@pytest.mark.parametrize("text, expected", HANDOFFS, ids=row_id)
def test_parse_handoff(text, expected):
    assert parse_handoff(text) == expected


BAD_HANDOFFS = [
    ("", "'' is not a handoff: expected a time such as 09:00, or a weekday and a time such as monday 09:00"),
    ("monday", "'monday' is not a time: expected HH:MM, such as 09:00"),
    ("monday 9", "'9' is not a time: expected HH:MM, such as 09:00"),
    ("monday 9am", "'9am' is not a time"),
    ("09:00 monday", "'09:00' is not a day: expected mon, tue, wed, thu, fri, sat or sun, or the full name"),
    ("moon 09:00", "'moon' is not a day"),
    ("mon tue 09:00", "'mon tue 09:00' is not a handoff"),
    ("24:00", "24:00 is not a handoff time: write 00:00"),
    ("monday 24:00", "24:00 is not a handoff time: write 00:00"),
    ("25:00", "25:00: hours go from 00 to 23"),
    ("12:75", "12:75: minutes go from 00 to 59"),
    ("09:00:30", "'09:00:30' is not a time"),
]


@pytest.mark.parametrize("text, message", BAD_HANDOFFS, ids=row_id)
def test_parse_handoff_refuses(text, message):
    with pytest.raises(ValueError) as raised:
        parse_handoff(text)
    assert str(raised.value).startswith(message)


EVERIES = [
    ("12h", timedelta(hours=12)),
    ("8h", timedelta(hours=8)),
    ("1h", timedelta(hours=1)),
    ("60m", timedelta(hours=1)),
    ("90m", timedelta(minutes=90)),
    ("1h30m", timedelta(minutes=90)),
    ("1h 30m", timedelta(minutes=90)),
    (" 12H ", timedelta(hours=12)),
    ("36h", timedelta(hours=36)),
    ("2d", timedelta(days=2)),
    ("1d12h", timedelta(hours=36)),
    ("28d", timedelta(days=28)),
    ("672h", timedelta(days=28)),
    ("0d1h", timedelta(hours=1)),
]


@pytest.mark.parametrize("text, expected", EVERIES, ids=row_id)
def test_parse_every(text, expected):
    assert parse_every(text) == expected


BAD_EVERIES = [
    ("", "'' is not a duration: expected hours and minutes such as 12h, 8h or 1h30m"),
    ("12", "'12' is not a duration"),
    ("12 hours", "'12 hours' is not a duration"),
    ("12s", "'12s' is not a duration"),
    ("h", "'h' is not a duration"),
    ("30m1h", "'30m1h' is not a duration"),
    ("1.5h", "'1.5h' is not a duration"),
    ("-2h", "'-2h' is not a duration"),
    ("30m", "30m is shorter than 1h: a shift lasts at least an hour"),
    ("59m", "59m is shorter than 1h"),
    ("0h", "0h is shorter than 1h"),
    ("29d", "29d is longer than 28 days: use weekly, or at most 28d"),
    ("673h", "673h is longer than 28 days"),
    ("27d24h1m", "27d24h1m is longer than 28 days"),
]


@pytest.mark.parametrize("text, message", BAD_EVERIES, ids=row_id)
def test_parse_every_refuses(text, message):
    with pytest.raises(ValueError) as raised:
        parse_every(text)
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize(
    "every, text",
    [(timedelta(hours=12), "12h"), (timedelta(minutes=90), "1h30m"), (timedelta(hours=36), "1d12h"),
     (timedelta(days=28), "28d"), (timedelta(minutes=5), "5m"), (timedelta(seconds=90), "1m30s"), (timedelta(0), "0m")],
    ids=row_id,
)  # fmt: skip
def test_format_every(every, text):
    assert format_every(every) == text
    if every >= timedelta(hours=1):
        assert parse_every(text) == every


@pytest.mark.parametrize("name", ["America/New_York", "Europe/London", "Australia/Sydney", "Asia/Kolkata", "UTC"])
def test_parse_time_zone(name):
    assert parse_time_zone(name) == ZoneInfo(name)


@pytest.mark.parametrize("name", ["", "America", "Nowhere/Town", "../etc/passwd", "/etc/localtime", "EST5EDT\x00"])
def test_parse_time_zone_refuses(name):
    with pytest.raises(ValueError, match="is not a time zone: expected an IANA name such as Europe/London"):
        parse_time_zone(name)
