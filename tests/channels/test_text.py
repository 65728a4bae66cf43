"""The channels' shared text helpers: shortening, times, status names, fitting escaped text, colors."""

from datetime import datetime, timedelta, timezone

import pytest

from pulse.notifications.channels import slack
from pulse.notifications.channels.notice import CRITICAL, INFO, RESOLVED, WARNING
from pulse.notifications.channels.text import (
    COLORS,
    STATUS_NAMES,
    fit,
    json_length,
    shorten,
    shorten_bytes,
    status_name,
    when,
)
from tests.channels import SINCE


@pytest.mark.parametrize(
    "text, limit, one_line, expected",
    [
        ("hello", 10, False, "hello"),
        ("hello", 5, False, "hello"),
        ("hello world", 5, False, "hell…"),
        ("hello world", 6, False, "hello…"),
        ("hello world", 7, False, "hello…"),  # no space before the ellipsis
        ("hello world", 1, False, "…"),
        ("hello world", 0, False, ""),
        ("", 0, False, ""),
        ("🚀🚀🚀", 2, False, "🚀…"),
        ("a  b\n\t c ", 10, True, "a b c"),
        ("a  b\n\t c ", 10, False, "a  b\n\t c "),
        ("line one\nline two", 12, True, "line one li…"),
    ],
)
def test_shorten(text, limit, one_line, expected):
    assert shorten(text, limit, one_line=one_line) == expected
    assert len(shorten(text, limit, one_line=one_line)) <= max(limit, 0)


@pytest.mark.parametrize(
    "text, limit, expected",
    [
        ("héllo", 6, "héllo"),
        ("héllo", 5, "h…"),  # "é" is 2 bytes: never split
        ("hello world", 8, "hello…"),
        ("🚀🚀", 8, "🚀🚀"),
        ("🚀🚀", 7, "🚀…"),
        ("🚀🚀", 6, "…"),
        ("abc", 3, "abc"),
        ("abcd", 3, "…"),
        ("abcd", 2, "ab"),  # no room for "…"
        ("abcd", 0, ""),
    ],
)
def test_shorten_bytes(text, limit, expected):
    assert shorten_bytes(text, limit) == expected
    assert len(shorten_bytes(text, limit).encode()) <= limit


@pytest.mark.parametrize(
    "dt, expected",
    [
        (SINCE, "2026-12-01 14:03 UTC"),
        (datetime(2026, 12, 1, 16, 3, 59, tzinfo=timezone(timedelta(hours=2))), "2026-12-01 14:03 UTC"),
        (datetime(2026, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-5))), "2027-01-01 04:59 UTC"),
        (datetime(2026, 1, 2, 3, 4), "2026-01-02 03:04 UTC"),  # naive: taken as UTC
    ],
)
def test_when(dt, expected):
    assert when(dt) == expected


@pytest.mark.parametrize(
    "status, expected",
    [
        ("OPERATIONAL", "Operational"),
        ("DEGRADED_PERFORMANCE", "Degraded performance"),
        ("PARTIAL_OUTAGE", "Partial outage"),
        ("MAJOR_OUTAGE", "Major outage"),
        ("UNDER_MAINTENANCE", "Under maintenance"),
        ("SOMETHING_NEW", "Something new"),
        ("X" * 500, "X" + "x" * 98 + "…"),
        (None, "Unknown"),
    ],
)
def test_status_name(status, expected):
    assert status_name(status) == expected


@pytest.mark.parametrize(
    "text, limit, escape, measure, expected",
    [
        ("a&b", 10, slack.escape, len, "a&amp;b"),
        ("&" * 10, 12, slack.escape, len, "&amp;&amp;…"),  # an entity is never cut in half
        ("<<", 4, slack.escape, len, "…"),
        ("éé", 12, None, json_length, "éé"),  # "\u00e9" is 6 bytes in JSON
        ("ééé", 12, None, json_length, "é…"),
        ("abc", 0, slack.escape, len, ""),
    ],
)
def test_fit(text, limit, escape, measure, expected):
    assert fit(text, limit, escape=escape, measure=measure) == expected


def test_every_severity_has_a_color():
    assert set(COLORS) == {CRITICAL, WARNING, RESOLVED, INFO}
    assert COLORS[CRITICAL] == 0xE01E5A
    assert len(STATUS_NAMES) == 5
