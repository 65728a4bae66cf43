"""Ticks: periodiq's sends survive a broker that is down; everyone else's see the error. Their
crons are read in UTC, whatever the scheduler's local time zone."""

import logging
import re
from datetime import UTC, datetime, timedelta

import dramatiq
import peewee
import pendulum
import pytest
from dramatiq.errors import ConnectionClosed

from pulse.app.workers import setup_broker
from pulse.models import Heartbeat
from pulse.recurring.ticks import UtcCron, tick
from schedules.cleanup import cleanup_tick
from schedules.heartbeat import heartbeat_tick
from tests.support.wait import wait_for

#: periodiq's line for each tick it sends, with the time it sends it for.
SENT = re.compile(r"Scheduling Actor\(utc_tick\) at (\S+ [\d:]+[+-][\d:]+)\.")


@pytest.fixture
def broker_down(monkeypatch):
    def refuse(self, **options):
        raise ConnectionClosed(OSError("connection refused"))

    monkeypatch.setattr(dramatiq.Actor, "send_with_options", refuse)


def test_a_tick_periodiq_cannot_send_is_logged_and_skipped(broker_down, caplog):
    with caplog.at_level(logging.ERROR, logger="pulse.recurring.ticks"):
        assert heartbeat_tick.send_with_options(scheduled_at="2026-12-01T00:00:00+00:00") is None
    assert "heartbeat_tick of 2026-12-01T00:00:00+00:00 not sent, RabbitMQ is unreachable (ConnectionClosed)" in (
        caplog.text
    )


def test_any_other_send_of_a_tick_raises(broker_down):
    with pytest.raises(ConnectionClosed):
        heartbeat_tick.send()


def test_a_tick_that_meets_a_database_outage_is_skipped_with_one_warning(monkeypatch, caplog):
    def unavailable():
        raise peewee.OperationalError("connection to server at 127.0.0.1, port 5432 failed: Connection refused\nIs it")

    monkeypatch.setattr(Heartbeat, "beat", staticmethod(lambda name: unavailable()))
    with caplog.at_level(logging.WARNING, logger="pulse.recurring.ticks"):
        assert heartbeat_tick() is None  # not raised: nothing to retry, nothing to dead-letter
    assert [r.getMessage() for r in caplog.records] == [
        "heartbeat_tick skipped: the database is unavailable (connection to server at 127.0.0.1, port 5432 failed: "
        "Connection refused); the next tick tries again."
    ]


def test_every_tick_reads_its_cron_in_utc():
    import schedules  # noqa: F401 - declares every tick

    ticks = [actor for actor in setup_broker().actors.values() if "periodic" in actor.options]
    assert cleanup_tick in ticks
    assert all(isinstance(actor.options["periodic"], UtcCron) for actor in ticks), ticks
    assert all(actor.actor_name.endswith("_tick") for actor in ticks), ticks


def test_a_tick_is_named_as_one():
    with pytest.raises(ValueError, match="a tick's name ends in _tick: sweep"):

        @tick("cleanup", "* * * * *")
        def sweep() -> None: ...


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kolkata", "Pacific/Chatham", "UTC"])
@pytest.mark.parametrize(
    "now",
    [
        "2026-03-07T18:30:00Z",
        "2026-03-08T06:59:00Z",  # New York a minute before its clocks go forward
        "2026-07-01T12:00:00Z",
        "2026-11-01T05:59:00Z",  # and a minute before they go back
    ],
)
def test_the_daily_cleanup_comes_due_at_midnight_utc_in_any_local_zone(zone, now):
    """periodiq asks with its own `pendulum.now()`, in the process's zone: the answer is the next
    00:00 UTC, and the zone's own midnight is not a time to run."""
    spec = cleanup_tick.options["periodic"]
    local = pendulum.parse(now).in_timezone(zone)
    due = spec.next_valid_date(local)
    assert due == pendulum.parse(now).add(days=1).start_of("day")
    assert spec.validate(due.in_timezone(zone))
    if zone != "UTC":
        assert not spec.validate(local.start_of("day"))


def test_a_scheduler_in_another_time_zone_sends_ticks_at_their_utc_times(schedulers):
    """The real scheduler under TZ=America/New_York, given the daily cleanup's cron moved to this
    minute and the next two in UTC (`tests.support.utc_tick`): it sends that tick as it starts
    (periodiq's first wake-up), naming the time in New York's zone."""
    scheduler = schedulers(env={"TZ": "America/New_York"}, modules=("tests.support.utc_tick",))

    def sent():
        return next((found for line in list(scheduler.lines) if (found := SENT.search(line))), None)

    at = datetime.fromisoformat(wait_for(sent, "the scheduler to send utc_tick", timeout=10).group(1))
    assert at.utcoffset() in (timedelta(hours=-5), timedelta(hours=-4))  # it runs in New York
    assert abs(datetime.now(UTC) - at) < timedelta(minutes=1)  # sent as the scheduler started
