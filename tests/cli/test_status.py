"""`pulse status`: the table, its colors, and uptime over 24 hours, 7 and 30 days."""

import json
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from pulse.cli.status import ago, status_text
from pulse.components.status import DEGRADED, MAINTENANCE, MAJOR_OUTAGE, OPERATIONAL, PARTIAL_OUTAGE
from pulse.models import Component, Incident, Organization, UptimeCheck, utcnow
from pulse.uptime.overview import overview
from tests.support.cli import pulse
from tests.support.env import ENV
from tests.support.worker import ROOT

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
RED, YELLOW, DIM = "\x1b[31m", "\x1b[33m", "\x1b[2m"


@pytest.fixture
def components(database):
    """acme/api with checks over 40 days and an open incident, acme/www never checked, globex/shop slow
    (set so, without checks)."""
    now = utcnow()
    acme = Organization.create(slug="acme", name="Acme")
    api = Component.create(
        organization=acme,
        key="api",
        name="Public API",
        url="https://api.acme.example/health",
        status=MAJOR_OUTAGE,
        last_checked_at=now - timedelta(minutes=5),
        last_response_time_ms=123,
    )
    Component.create(organization=acme, key="www", name="Website", url="https://www.acme.example/")
    globex = Organization.create(slug="globex", name="Globex")
    Component.create(organization=globex, key="shop", name="Shop", url="https://s.example/", status=DEGRADED)
    Incident.create(organization=acme, component=api, title="Public API is down", automatic=True)
    for age, seen in [
        *[(HOUR, OPERATIONAL), (2 * HOUR, OPERATIONAL), (3 * HOUR, DEGRADED), (4 * HOUR, MAJOR_OUTAGE)],  # 24 h: 3 of 4
        *[(2 * DAY, MAJOR_OUTAGE), (3 * DAY, OPERATIONAL)],  # 7 d: 4 of 6
        *[(10 * DAY, OPERATIONAL), (20 * DAY, OPERATIONAL)],  # 30 d: 6 of 8
        *[(31 * DAY, MAJOR_OUTAGE), (40 * DAY, MAJOR_OUTAGE)],  # older: not counted
    ]:
        at = now - age
        UptimeCheck.create(component=api, scheduled_at=at, checked_at=at, success=seen == OPERATIONAL, outcome=seen)
    # Recorded late: a check counts at its scheduled time, so this one not at all.
    UptimeCheck.create(component=api, scheduled_at=now - 35 * DAY, checked_at=now, success=False, outcome=MAJOR_OUTAGE)
    return now


def uptime(row):
    return row["uptime_24h"], row["uptime_7d"], row["uptime_30d"]


def test_uptime_is_the_share_of_checks_up_in_each_window(components):
    api, www, shop = overview()
    assert (api["key"], uptime(api)) == ("api", (75.0, 66.66, 75.0))  # truncated: 66.66 never shows as 66.67
    assert (www["key"], uptime(www)) == ("www", (None, None, None))
    assert (shop["key"], uptime(shop)) == ("shop", (None, None, None))
    assert [r["key"] for r in overview("globex")] == ["shop"]


def test_json_keeps_its_keys_and_adds_uptime(components):
    result = pulse("status", "--json")
    assert result.returncode == 0, result.stderr
    api = json.loads(result.stdout)[0]
    assert api["incident"]["title"] == "Public API is down"
    assert list(api) == [
        "organization",
        "key",
        "name",
        "type",
        "kind",
        "status",
        "status_since",
        "paused",
        "last_checked_at",
        "last_response_time_ms",
        "incident",
        "uptime_24h",
        "uptime_7d",
        "uptime_30d",
        "unknown_24h_s",
        "unknown_7d_s",
        "unknown_30d_s",
        "last_ping_at",
        "deadline_at",
        "cron",
        "time_zone",
        "locations",
    ]
    assert uptime(api) == (75.0, 66.66, 75.0)


def test_json_loads_neither_the_broker_nor_http_clients_nor_rich(components):
    """`pulse status` imports what it uses only: its start is a share of its time."""
    shown = "import sys; from pulse.cli import main; main(standalone_mode=False); print(*sys.modules, file=sys.stderr)"
    result = subprocess.run(
        [sys.executable, "-c", shown, "status", "--json"], cwd=ROOT, env=ENV, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert [r["key"] for r in json.loads(result.stdout)] == ["api", "www", "shop"]
    loaded = {name.split(".")[0] for name in result.stderr.split()}
    assert "peewee" in loaded
    assert not loaded & {"dramatiq", "pika", "periodiq", "requests", "httpx", "rich"}


def test_the_table_has_a_line_per_component_and_no_escape_codes_when_piped(components):
    result = pulse("status")
    assert result.returncode == 0, result.stderr
    header, api, www, shop = (line.split() for line in result.stdout.splitlines())
    assert header == "component name kind status checked response up 24h up 7d up 30d unknown 24h open incident".split()
    assert (
        api
        == "acme/api Public API http MAJOR_OUTAGE 5m ago 123 ms 75.00% 66.66% 75.00% - #1 Public API is down".split()
    )
    assert www == "acme/www Website http OPERATIONAL never - - - - - -".split()
    assert shop == "globex/shop Shop http DEGRADED_PERFORMANCE never - - - - - -".split()
    assert "\x1b" not in result.stdout


def test_each_endpoint_shows_its_check_kind(database):
    acme = Organization.create(slug="acme", name="Acme")
    Component.create(organization=acme, key="db", name="Database", kind="tcp", target={"host": "db", "port": 5432})
    Component.create(organization=acme, key="www", name="Website", url="https://www.acme.example/")
    Component.create(organization=acme, key="ops", name="Operations", type="SERVICE")

    assert [(r["key"], r["kind"]) for r in overview()] == [("db", "tcp"), ("ops", None), ("www", "http")]
    lines = pulse("status", COLUMNS="200").stdout.splitlines()
    assert [line.split()[:3] for line in lines[1:]] == [
        ["acme/db", "Database", "tcp"],
        ["acme/ops", "Operations", "-"],
        ["acme/www", "Website", "http"],
    ]


def test_statuses_are_colored_when_color_is_forced_unless_no_color(components):
    colored = pulse("status", FORCE_COLOR="1", COLUMNS="200").stdout
    assert f"{RED}MAJOR_OUTAGE" in colored and f"{YELLOW}DEGRADED_PERFORMANCE" in colored
    assert f"{DIM}OPERATIONAL" in colored  # never checked

    plain = pulse("status", FORCE_COLOR="1", COLUMNS="200", NO_COLOR="1").stdout
    assert "MAJOR_OUTAGE" in plain and RED not in plain and YELLOW not in plain


@pytest.mark.parametrize("env", [{}, {"FORCE_COLOR": "1", "COLUMNS": "200"}], ids=["piped", "terminal"])
def test_names_cannot_drive_the_terminal(env, database):
    """A name may hold escape sequences (retitle the window, clear the screen) or a bidirectional
    override: each shows as its escape, on one line, and acts on nothing."""
    hostile = "Shop\x1b]0;pwned\x07\x1b[2J\u202eevil\nline"
    organization = Organization.create(slug="acme", name=hostile)
    component = Component.create(organization=organization, key="shop", name=hostile, url="https://s.example/")
    Incident.create(organization=organization, component=component, title=hostile, automatic=True)

    shown = pulse("status", **env).stdout

    assert "\x1b]" not in shown and "\x1b[2J" not in shown and "\u202e" not in shown and "\x07" not in shown
    assert shown.count("\\x1b]0;pwned\\x07\\x1b[2J\\u202eevil\\nline") == 2  # the name and the incident
    assert len(shown.strip().splitlines()) == 2  # the header and one row


def test_a_narrow_terminal_leaves_names_out_and_cuts_no_figure(components):
    def on_terminal(columns):
        shown = pulse("status", FORCE_COLOR="1", COLUMNS=columns).stdout
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown).splitlines()

    wide = on_terminal("200")
    assert (
        wide[0].split()
        == "component name kind status checked response up 24h up 7d up 30d unknown 24h open incident".split()
    )

    narrow = on_terminal("80")
    assert narrow[0].split() == "component kind status checked response up 24h up 7d up 30d incident".split()
    assert narrow[1].split()[:10] == "acme/api http MAJOR_OUTAGE 5m ago 123 ms 75.00% 66.66% 75.00%".split()
    assert "globex/shop http DEGRADED never - - - - -".split() in [line.split() for line in narrow]
    assert all(len(line) <= 80 for line in narrow)


def test_one_organization(components):
    assert [r["key"] for r in json.loads(pulse("status", "globex", "--json").stdout)] == ["shop"]
    assert pulse("status", "acme").stdout.count("acme/") == 2
    missing = pulse("status", "nope")
    assert (missing.returncode, missing.stderr) == (2, "pulse: no organization 'nope'\n")


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-3, "0s ago"),
        (0, "0s ago"),
        (59, "59s ago"),
        (60, "1m ago"),
        (3599, "59m ago"),
        (3600, "1h ago"),
        (86399, "23h ago"),
        (86400, "1d ago"),
        (40 * 86400, "40d ago"),
    ],
)
def test_ago(seconds, shown):
    now = datetime(2026, 12, 1, tzinfo=UTC)
    assert ago(now - timedelta(seconds=seconds), now) == shown


@pytest.mark.parametrize(
    ("current", "checked", "paused", "style"),
    [
        (OPERATIONAL, True, False, "green"),
        (DEGRADED, True, False, "yellow"),
        (PARTIAL_OUTAGE, True, False, "red"),
        (MAJOR_OUTAGE, True, False, "red"),
        (MAINTENANCE, True, False, "blue"),
        ("SOMETHING_NEW", True, False, "dim"),
        (OPERATIONAL, False, False, "dim"),  # never checked: the default status says nothing
        (MAJOR_OUTAGE, False, False, "red"),  # set without a check (a service): still an outage
        (MAJOR_OUTAGE, True, True, "dim"),  # paused: no longer checked
    ],
)
def test_status_styles(current, checked, paused, style):
    row = {"status": current, "last_checked_at": "2026-12-01T00:00:00+00:00" if checked else None, "paused": paused}
    assert status_text(row).style == style
    assert str(status_text(row)) == current + (" (paused)" if paused else "")
