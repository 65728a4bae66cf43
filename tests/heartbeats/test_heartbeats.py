"""Heartbeat monitors (`pulse.heartbeats`): a ping recorded in one statement, applied by a worker
through the status machine; a silent monitor goes down at its deadline, one failure per period; a
run started must finish within the grace."""

from datetime import UTC, datetime, timedelta

import pytest

from pulse.components.status import MAJOR_OUTAGE, OPERATIONAL
from pulse.heartbeats import apply, due, ping
from pulse.inbound.tokens import digest
from pulse.models import Component, Event, HeartbeatMonitor, HeartbeatPing, Incident, utcnow
from tests.heartbeats.conftest import TOKEN, reasons, row
from tests.support.wait import wait_for

START = datetime(2025, 1, 10, 12, 0, tzinfo=UTC)  # a run's start, far from the cron expressions' matches


@pytest.mark.parametrize(
    ("kind", "stored", "exit_status"),
    [("success", "success", None), ("fail", "fail", None), ("0", "success", 0), ("3", "fail", 3),
     ("255", "fail", 255)],
)  # fmt: skip
def test_a_success_or_a_failure_waits_for_a_worker_and_its_claim_moves_the_deadline(monitor, kind, stored, exit_status):
    component, now = monitor(period_s=600, grace_s=120), utcnow()
    assert ping.record(TOKEN, kind, b"x" * 20_000, now) is True
    (recorded,) = HeartbeatPing.select()
    assert (recorded.kind, recorded.exit_status, recorded.applied) == (stored, exit_status, False)
    assert bytes(recorded.body) == b"x" * ping.BODY_LIMIT
    monitored = row(component)
    assert monitored.last_ping_at == now and monitored.pending_at == now and monitored.deadline_at is None

    assert due.claim(now) == [((component.id, None), now)]
    monitored = row(component)
    assert monitored.deadline_at == now + timedelta(seconds=720) and monitored.pending_at is None


def test_a_start_is_the_run_in_progress_due_to_finish_within_the_grace(monitor):
    component, now = monitor(period_s=3600, grace_s=300), utcnow()
    assert ping.record(TOKEN, "start", b"", now) is True
    monitored = row(component)
    assert monitored.last_start_at == now and monitored.deadline_at == now + timedelta(seconds=300)
    assert (monitored.last_ping_at, monitored.pending_at) == (None, None)
    assert HeartbeatPing.get().applied  # it changes no status itself


@pytest.mark.parametrize("finish", ["success", "fail", "0", "1"])
def test_a_success_or_a_failure_clears_the_run_started(monitor, finish):
    component, start = monitor(period_s=3600, grace_s=300), START
    ping.record(TOKEN, "start", b"", start)
    ping.record(TOKEN, finish, b"", start + timedelta(seconds=60))
    assert row(component).last_start_at is None
    due.claim(start + timedelta(seconds=60))
    assert row(component).deadline_at == start + timedelta(seconds=60 + 3600 + 300)  # the next run's
    assert due.claim(start + timedelta(seconds=300)) == []  # the start's deadline is gone


def test_a_start_overtaken_by_a_later_ping_is_no_run_in_progress(monitor):
    component, now = monitor(period_s=3600, grace_s=300), utcnow()
    ping.record(TOKEN, "success", b"", now)
    ping.record(TOKEN, "start", b"", now - timedelta(milliseconds=5))  # its request committed second
    assert row(component).last_start_at is None and row(component).deadline_at is None


@pytest.mark.parametrize("cron", [None, "0 3 * * *"], ids=["period", "cron"])
def test_a_run_started_and_not_finished_within_the_grace_goes_down_once(monitor, cron):
    component, start = monitor(period_s=86400, grace_s=600, cron=cron), START
    ping.record(TOKEN, "success", b"", start - timedelta(seconds=10))
    ping.record(TOKEN, "start", b"", start)
    due.claim(start)  # the success applied; the start's deadline stays, the earlier
    apply.apply(component.id, None)
    assert row(component).deadline_at == start + timedelta(seconds=600)
    assert due.claim(start + timedelta(seconds=599)) == []

    ((key, _),) = due.claim(start + timedelta(seconds=600))
    assert key == (component.id, start + timedelta(seconds=600))
    assert row(component).deadline_at > start + timedelta(hours=1)  # the next run's, not the start's again
    apply.apply(*key)
    assert Component.get_by_id(component.id).status == MAJOR_OUTAGE
    assert reasons()[-1] == f"started at {start.isoformat()}, no success or failure within the grace (10m)"
    assert due.claim(start + timedelta(seconds=1200)) == []  # once

    ping.record(TOKEN, "success", b"", utcnow())  # the run ends, late: up again
    ((key, _),) = due.claim(utcnow())
    apply.apply(*key)
    assert Component.get_by_id(component.id).status == OPERATIONAL


def test_a_start_before_any_ping_has_its_deadline_too(monitor):
    component, start = monitor(period_s=3600, grace_s=60), START
    ping.record(TOKEN, "start", b"", start)
    ((key, _),) = due.claim(start + timedelta(seconds=61))
    assert key == (component.id, start + timedelta(seconds=60)) and row(component).deadline_at is None
    apply.apply(*key)
    assert Component.get_by_id(component.id).status == MAJOR_OUTAGE


def test_a_finish_committed_just_after_the_claim_cancels_the_missed_start(monitor):
    component, start = monitor(period_s=3600, grace_s=60), START
    ping.record(TOKEN, "start", b"", start)
    ((key, _),) = due.claim(start + timedelta(seconds=61))
    ping.record(TOKEN, "success", b"", start + timedelta(seconds=59))  # committed after the claim
    apply.apply(*key)
    assert Component.get_by_id(component.id).status == OPERATIONAL and reasons() == []


def test_an_unknown_token_writes_nothing(monitor):
    component = monitor()
    assert ping.record("u" * 40, "success", b"hello", utcnow()) is False
    assert HeartbeatPing.select().count() == 0 and row(component).last_ping_at is None


@pytest.mark.parametrize("kind", ["256", "-1", "ok", "", "\u0661"])
def test_a_kind_that_is_none_of_them_is_refused(monitor, kind):
    monitor()
    with pytest.raises(ValueError):
        ping.record(TOKEN, kind, b"", utcnow())
    assert HeartbeatPing.select().count() == 0


def test_a_missed_deadline_is_one_failure_per_period_and_applies_once(monitor):
    component = monitor(period_s=60, grace_s=60)
    last = utcnow() - timedelta(seconds=400)
    ping.record(TOKEN, "success", b"", last)
    first = last + timedelta(seconds=120)  # the deadline: last ping + period + grace
    # claimed long after: one missed deadline, the latest, and the next one a period later
    ((key, due_at),) = due.claim(utcnow())
    latest = first + timedelta(seconds=60 * 4)
    assert key == (component.id, latest) and due_at == last
    assert row(component).deadline_at == latest + timedelta(seconds=60)
    assert due.claim(utcnow()) == []  # claimed: nothing twice

    events = apply.apply(*key)
    assert len(events) == 2  # the success first changes nothing; then status changed, incident opened
    assert Component.get_by_id(component.id).status == MAJOR_OUTAGE
    assert Incident.select().where(Incident.resolved_at.is_null()).count() == 1
    assert apply.apply(*key) == []  # redelivered: nothing twice

    ping.record(TOKEN, "0", b"", utcnow())
    ((key, _),) = due.claim(utcnow())
    assert key == (component.id, None)
    assert len(apply.apply(*key)) == 2  # status changed, incident resolved
    assert Component.get_by_id(component.id).status == OPERATIONAL
    assert Incident.get().resolved_at is not None
    assert [e.type for e in Event.select().order_by(Event.id)][-1] == "incident.resolved"


def test_a_ping_just_after_the_claim_cancels_the_missed_deadline(monitor):
    component = monitor(period_s=60, grace_s=60)
    ping.record(TOKEN, "success", b"", utcnow() - timedelta(seconds=121))
    ((key, _),) = due.claim(utcnow())
    ping.record(TOKEN, "success", b"", key[1] - timedelta(milliseconds=10))  # committed after the claim
    apply.apply(*key)
    assert Component.get_by_id(component.id).status == OPERATIONAL


@pytest.mark.parametrize("cron", [None, "* * * * * *"], ids=["period", "cron"])
def test_a_silent_monitor_goes_down_and_a_ping_recovers_it_through_a_worker(monitor, workers, cron):
    # below the file's bounds, rows made directly: every second, or each second's match
    component = monitor(period_s=1, grace_s=1, cron=cron)
    ping.record(TOKEN, "success", b"", utcnow())
    worker = workers("--queues", "uptime", threads=1)
    wait_for(lambda: Component.get_by_id(component.id).status == MAJOR_OUTAGE, "the monitor down", timeout=20)
    wait_for(lambda: Incident.select().count() == 1, "its incident")
    assert Event.select().where(Event.type == "incident.opened").count() == 1
    wait_for(lambda: Event.select().where(Event.sent_at.is_null()).count() == 0, "its events sent")

    worker.kill()  # the deadline survives: another process's loop takes it on
    failures = Component.get_by_id(component.id).consecutive_failures
    workers("--queues", "uptime", threads=1)
    wait_for(lambda: Component.get_by_id(component.id).consecutive_failures > failures, "the next missed deadline")
    ping.record(TOKEN, "success", b"", utcnow())
    wait_for(lambda: Component.get_by_id(component.id).status == OPERATIONAL, "the monitor up", timeout=20)
    wait_for(lambda: Incident.get().resolved_at is not None, "its incident resolved")


def test_status_shows_the_last_ping_and_the_next_deadline(monitor):
    from tests.support.cli import pulse

    monitor(period_s=3600, grace_s=600)
    ping.record(TOKEN, "success", b"", utcnow() - timedelta(minutes=10))
    due.claim(utcnow())
    result = pulse("status", COLUMNS="200")
    assert result.returncode == 0, result.stderr
    line = result.stdout.splitlines()[1].split()
    assert line[:8] == "acme/backup Backup heartbeat OPERATIONAL 10m ago due in".split() and line[8] in ("59m", "1h")
    assert TOKEN not in result.stdout


def test_status_shows_a_cron_monitors_expression_and_time_zone_after_its_deadline(monitor):
    import json

    from tests.support.cli import pulse

    monitor(cron="0 3 * * *", zone="Europe/Berlin", grace_s=600)
    ping.record(TOKEN, "success", b"", utcnow() - timedelta(minutes=10))
    due.claim(utcnow())
    result = pulse("status", COLUMNS="200")
    assert result.returncode == 0, result.stderr
    line = result.stdout.splitlines()[1]
    assert line.split()[:7] == "acme/backup Backup heartbeat OPERATIONAL 10m ago due".split()
    assert line.split(", ", 1)[1].split("  ")[0] == "cron 0 3 * * * Europe/Berlin"
    (shown,) = json.loads(pulse("status", "--json").stdout)
    assert (shown["cron"], shown["time_zone"], shown["kind"]) == ("0 3 * * *", "Europe/Berlin", None)


def test_the_file_declares_a_monitor_and_keeps_only_its_tokens_digest(database):
    from pulse import configfile

    text = f"""
organizations:
  - slug: acme
    name: Acme
    components:
      - {{key: backup, name: Backup, type: heartbeat, period: 2h, grace: 5m, token: "{TOKEN}"}}
"""
    configfile.apply(configfile.load(text))
    configfile.apply(configfile.load(text))  # again: the same monitor
    (monitored,) = HeartbeatMonitor.select()
    assert bytes(monitored.token_sha256) == digest(TOKEN)
    assert (monitored.period_seconds, monitored.grace_seconds) == (7200, 300)
    assert Component.get().failure_threshold == 1
    configfile.apply(configfile.load(text.replace("type: heartbeat, period: 2h, grace: 5m, token: ", "url: ")
                                     .replace(TOKEN, "https://acme.example/")))  # fmt: skip
    assert HeartbeatMonitor.select().count() == 0
