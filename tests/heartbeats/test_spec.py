"""Heartbeat monitors in the configuration file (`pulse.heartbeats.spec`): a period or a cron
expression with its time zone, one of the two; a bad one refused with its path and what is wrong,
writing nothing; a new one moving the deadline."""

from datetime import UTC, datetime, timedelta

import pytest

from pulse import configfile
from pulse.configfile import ConfigError
from pulse.heartbeats import due, ping
from pulse.models import Component, HeartbeatMonitor
from tests.heartbeats.conftest import TOKEN, row

PATH = "organizations[0].components[0]"
ONE = f"{PATH}: a heartbeat needs either a period or a cron expression (cron), not both"


def text(fields):
    return f"""
organizations:
  - slug: acme
    name: Acme
    components:
      - {{key: backup, name: Backup, type: heartbeat, token: "{TOKEN}", {fields}}}
"""


def test_a_monitor_on_cron_keeps_its_expression_and_time_zone(database):
    configfile.apply(configfile.load(text('cron: "0 3 * * *", time_zone: Europe/Berlin, grace: 30m')))
    (monitored,) = HeartbeatMonitor.select()
    assert (monitored.cron, monitored.time_zone, monitored.period_seconds, monitored.grace_seconds) == (
        "0 3 * * *", "Europe/Berlin", None, 1800,
    )  # fmt: skip


def test_a_cron_expressions_time_zone_is_utc_unless_given(database):
    configfile.apply(configfile.load(text('cron: "0 3 * * *"')))
    assert (HeartbeatMonitor.get().time_zone, HeartbeatMonitor.get().grace_seconds) == ("UTC", 3600)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [("grace: 1h", ONE),
     ('period: 1d, cron: "0 3 * * *"', ONE),
     ("period: 1d, time_zone: Europe/Berlin", f"{PATH}: a time_zone goes with a cron expression (cron)"),
     ('cron: "0 3 * *"', f"{PATH}.cron: '0 3 * *' has 4 fields; a cron expression has 5"),
     ('cron: "0 3 * * sun-"', f"{PATH}.cron: '0 3 * * sun-' is not a valid cron expression: bad day-of-week"),
     ('cron: "0 3 * * *", time_zone: Mars/Olympus', f"{PATH}.time_zone: 'Mars/Olympus' is not an IANA time zone"),
     ("cron: 3", f"{PATH}.cron: Input should be a valid string")],
)  # fmt: skip
def test_a_bad_schedule_of_runs_is_refused_naming_the_field_and_the_problem(database, fields, problem):
    with pytest.raises(ConfigError) as refused:
        configfile.load(text(fields))
    assert str(refused.value).startswith(problem), str(refused.value)
    assert Component.select().count() == 0


def test_only_a_heartbeat_has_a_cron_expression(database):
    endpoint = text('cron: "0 3 * * *"').replace(f'type: heartbeat, token: "{TOKEN}", ', "url: https://a.example/, ")
    with pytest.raises(ConfigError, match="only a heartbeat has a period, a cron expression, a grace and a token"):
        configfile.load(endpoint)


def test_a_new_cron_expression_moves_the_deadline_to_its_next_match_after_the_last_ping(database):
    configfile.apply(configfile.load(text("period: 1d, grace: 1h")))
    monitored = Component.get()
    pinged = datetime(2025, 1, 10, 2, 30, tzinfo=UTC)
    ping.record(TOKEN, "success", b"", pinged)
    due.claim(pinged)
    assert row(monitored).deadline_at == pinged + timedelta(days=1, hours=1)

    configfile.apply(configfile.load(text('cron: "0 3 * * *", time_zone: Europe/Berlin, grace: 1h')))
    assert row(monitored).deadline_at == datetime(2025, 1, 11, 3, 0, tzinfo=UTC)  # 03:00 CET, plus the hour
    configfile.apply(configfile.load(text('cron: "0 3 * * *", time_zone: Europe/Berlin, grace: 1h')))
    assert row(monitored).deadline_at == datetime(2025, 1, 11, 3, 0, tzinfo=UTC)  # the same file: unchanged
    configfile.apply(configfile.load(text('cron: "0 3 * * *", time_zone: America/New_York, grace: 1h')))
    assert row(monitored).deadline_at == datetime(2025, 1, 10, 9, 0, tzinfo=UTC)  # 03:00 EST, plus the hour
