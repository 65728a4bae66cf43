"""Retention: what the cleanup deletes, and everything it keeps."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from pulse.cleanup import partitions, retention, rollups
from pulse.cleanup import run as cleanup_run
from pulse.db import db
from pulse.models import (
    AlertEvent,
    AlertSource,
    ApiIdempotency,
    ApiToken,
    CleanupRun,
    ComponentRollup,
    Event,
    FailedMessage,
    Incident,
    Notification,
    OnCallAlert,
    Organization,
    RollupState,
    UptimeCheck,
)
from pulse.models.api_writes import KEY_LIFETIME
from tests.cleanup.conftest import DAY, HOUR, NOW, add_checks

DEAD_LETTERS = timedelta(days=30)
TODAY = NOW.replace(hour=0, minute=0, second=0, microsecond=0)


def day_of_checks(component_id, day, every=timedelta(minutes=30)):
    add_checks(component_id, [(day + i * every, day + i * every, "OPERATIONAL", 10) for i in range(int(DAY / every))])


def clean(**options):
    return retention.clean(NOW, dead_letters=DEAD_LETTERS, **options)


def found(report, table):
    (result,) = [f for f in report.tables if f.table == table]
    return result


def history_partitions(now=NOW, days=range(-95, 1)):
    """Day partitions for a stretch of days before ``now`` (tests write history that old)."""
    for offset in days:
        day = TODAY + offset * DAY
        if partitions.day_name("uptime_check", day) not in {p.name for p in partitions.partitions("uptime_check")}:
            partitions._locked(lambda day=day: partitions._create("uptime_check", day))


@pytest.fixture
def rolled(component):
    """acme/api with a day of checks 92, 91, 90 and 89 days ago and today, rolled up."""
    api = component()
    history_partitions()
    for age in (92, 91, 90, 89, 0):
        day_of_checks(api.id, TODAY - age * DAY)
    rollups.catch_up(rollups.UPTIME, now=NOW + HOUR)
    return api


def test_the_days_past_retention_go_with_their_partitions(rolled):
    assert UptimeCheck.select().count() == 5 * 48
    rolled_up = ComponentRollup.select().count()
    dry = clean(dry_run=True)
    assert (found(dry, "uptime_check").rows, UptimeCheck.select().count()) == (96, 5 * 48)  # a dry run deletes nothing
    report = clean()
    uptime = found(report, "uptime_check")
    expected = [partitions.day_name("uptime_check", TODAY - age * DAY) for age in range(95, 90, -1)]  # 3 empty
    assert (
        (uptime.rows, uptime.partitions)
        == (96, expected)
        == (found(dry, "uptime_check").rows, found(dry, "uptime_check").partitions)
    )
    assert uptime.bytes > 0
    names = {p.name for p in partitions.partitions("uptime_check")}
    assert not names & set(expected)
    # 90 days ago is not entirely past 90 days: kept, as is everything younger.
    assert UptimeCheck.select().count() == 3 * 48
    assert ComponentRollup.select().count() == rolled_up > 0  # the rollups stay
    assert found(clean(), "uptime_check").rows == 0  # done: a second run finds nothing


def test_a_partition_waits_for_the_rollups_to_hold_its_rows(rolled):
    RollupState.update(watermark=TODAY - 91 * DAY - HOUR).execute()
    report = clean()
    uptime = found(report, "uptime_check")
    day_92, day_91 = (partitions.day_name("uptime_check", TODAY - age * DAY) for age in (92, 91))
    assert day_92 not in uptime.partitions and day_91 not in uptime.partitions  # not all rolled up yet
    assert uptime.held == f"{day_91}: waiting for the rollups to take its rows in"
    RollupState.update(watermark=NOW).execute()
    late = TODAY - 92 * DAY + 5 * HOUR
    add_checks(rolled.id, [(late + timedelta(minutes=1), NOW + timedelta(minutes=1), "MAJOR_OUTAGE", 1)])
    assert found(clean(), "uptime_check").partitions == [day_91]  # 92 days ago has a check recorded late


def test_an_organization_with_a_shorter_retention_loses_whole_days_sooner(rolled, component):
    globex = Organization.create(slug="globex", name="Globex", retention={"uptime_checks": 3 * 86400})
    shop = component("shop", organization=globex)
    for age in (5, 4, 3, 2):
        day_of_checks(shop.id, TODAY - age * DAY)
    day_of_checks(shop.id, TODAY - 3 * DAY + 12 * HOUR + timedelta(seconds=1), every=timedelta(minutes=7))
    rollups.catch_up(rollups.UPTIME, now=NOW + HOUR)
    clean()
    kept = sorted({c.scheduled_at.date() for c in UptimeCheck.select().where(UptimeCheck.component == shop)})
    # 3 days ago began more than 3 days ago, but ends less: kept whole, as partitions are.
    assert kept == [(TODAY - 3 * DAY).date(), (TODAY - 2 * DAY).date()]
    assert UptimeCheck.select().where(UptimeCheck.component == rolled).count() == 3 * 48  # acme's 90 days


def test_rows_in_the_default_partition_go_by_their_own_age(component):
    api = component()
    old = TODAY - 200 * DAY  # no partition for that day: the row lands in the default one
    add_checks(api.id, [(old, old, "OPERATIONAL", 1), (TODAY - 10 * DAY, TODAY - 10 * DAY, "OPERATIONAL", 1)])
    assert {r[0] for r in db.execute_sql("SELECT tableoid::regclass::text FROM uptime_check")} == {
        "uptime_check_default"
    }
    rollups.catch_up(rollups.UPTIME, now=NOW)
    assert found(clean(), "uptime_check").rows == 1
    assert [c.scheduled_at for c in UptimeCheck.select()] == [TODAY - 10 * DAY]


def test_a_day_partition_takes_its_rows_out_of_the_default_one(component):
    api = component()
    later = TODAY + 20 * DAY  # beyond the partitions made ahead
    add_checks(api.id, [(later + HOUR, later + HOUR, "OPERATIONAL", 1)])
    with db.atomic():
        partitions._create("uptime_check", later)
    ((where,),) = db.execute_sql("SELECT tableoid::regclass::text FROM uptime_check").fetchall()
    assert where == partitions.day_name("uptime_check", later)


def test_partitions_are_made_a_week_ahead(database):
    made = partitions.ensure("uptime_check", NOW + 30 * DAY)
    assert made == [partitions.day_name("uptime_check", TODAY + (30 + d) * DAY) for d in range(8)]
    assert partitions.ensure("uptime_check", NOW + 30 * DAY) == []


def test_notifications_events_and_alerts_go_when_they_are_over(acme, component):
    api = component()
    old, young = NOW - 91 * DAY, NOW - 89 * DAY
    incident = Incident.create(organization=acme, component=api, title="down", started_at=old, resolved_at=old)

    def event(at, sent=True):
        return Event.create(
            organization=acme, component=api, type="incident.opened", created_at=at, sent_at=at if sent else None
        )

    def notification(e, status, at):
        return Notification.create(
            event=e, organization=acme, key=f"k{status}", kind="webhook", destination="x", status=status, created_at=at
        )

    done = event(old)
    for status in ("sent", "failed", "cancelled"):
        notification(done, status, old)
    waiting = event(old)
    notification(waiting, "pending", old)  # not over: its event stays too
    unsent = event(old, sent=False)  # the outbox still has to send it
    young_event = event(young)
    paged = event(old)
    alert = OnCallAlert.create(organization=acme, incident=incident, component=api, event=paged, policy={},
                               status="resolved", next_escalation_at=None, resolved_at=young)  # fmt: skip

    report = clean()
    assert (found(report, "notification").rows, found(report, "event").rows, found(report, "oncall_alert").rows) == (
        3,
        1,
        0,
    )
    assert {e.id for e in Event.select()} == {waiting.id, unsent.id, young_event.id, paged.id}
    assert [n.status for n in Notification.select()] == ["pending"]
    OnCallAlert.update(resolved_at=old).execute()
    report = clean()
    assert (found(report, "oncall_alert").rows, found(report, "event").rows) == (1, 1)  # the alert, then its event
    assert Incident.select().count() == 1 and alert.id not in {a.id for a in OnCallAlert.select()}


def test_alert_events_go_once_applied_and_past_the_events_retention(acme):
    source = AlertSource.create(organization=acme, key="app", name="App", kind="events", token_sha256=b"s" * 32,
                                routes=[{"match": {}, "policy": "default"}])  # fmt: skip

    def arrived(at, applied):
        fields = {
            "action": "trigger",
            "dedup_key": "k",
            "summary": "s",
            "severity": "info",
            "labels": {},
            "details": {},
        }
        return AlertEvent.create(source=source, received_at=at, applied=applied, **fields).id

    kept = {arrived(NOW - 89 * DAY, True), arrived(NOW - 91 * DAY, False)}  # young; not applied yet
    arrived(NOW - 91 * DAY, True)
    assert found(clean(), "alert_event").rows == 1
    assert {e.id for e in AlertEvent.select()} == kept


def test_batches_go_on_past_the_rows_they_keep(acme, component, monkeypatch):
    """A batch full of rows that stay (pending, at the same time as others that go) does not
    stop the ones after it, nor skip the rows of the same time."""
    monkeypatch.setattr(retention, "BATCH", 2)
    api = component()
    old = NOW - 91 * DAY
    event = Event.create(organization=acme, component=api, type="incident.opened", created_at=old, sent_at=old)
    statuses = ["sent", "pending", "pending", "pending", "sent", "sent", "failed"]
    for i, status in enumerate(statuses):
        at = old - DAY if i == 0 else old  # one a day older, the rest at one time, as a broadcast's
        Notification.create(event=event, organization=acme, key=f"k{i}", kind="webhook", destination="x",
                            status=status, created_at=at)  # fmt: skip
    report = clean()
    assert found(report, "notification").rows == 4
    assert sorted(n.key for n in Notification.select()) == ["k1", "k2", "k3"]


def test_dead_letters_and_rollups_go_after_theirs(component):
    for name, age in (("old", 31), ("young", 29)):
        FailedMessage.create(message_id=name, queue_name="uptime", actor_name="check", error_type="E",
                             error_message="", traceback="", failed_at=NOW - age * DAY)  # fmt: skip
    api = component()
    for age in (397, 395):
        start = TODAY - age * DAY
        ComponentRollup.insert(component=api, period="day", start=start, checks=1, operational=1, degraded=0, outage=0,
                               maintenance=0, responses=0, response_ms_sum=0).execute()  # fmt: skip
    report = clean()
    assert (found(report, "failed_message").rows, found(report, "component_rollup").rows) == (1, 1)
    assert [m.message_id for m in FailedMessage.select()] == ["young"]
    assert [r.start for r in ComponentRollup.select()] == [TODAY - 395 * DAY]


def test_idempotency_keys_go_once_they_expire(acme):
    token = ApiToken.create(organization=acme, scopes=["write"], token_sha256=b"t" * 32)
    for key, age in (("old", KEY_LIFETIME + HOUR), ("young", KEY_LIFETIME - HOUR)):
        ApiIdempotency.create(token=token, key=key, request_sha256=b"s" * 32, created_at=NOW - age)
    report = clean()
    assert found(report, "api_idempotency").rows == 1
    assert [k.key for k in ApiIdempotency.select()] == ["young"]


def test_a_run_out_of_time_goes_on_where_it_stopped(rolled):
    first = cleanup_run.run(dead_letters=DEAD_LETTERS, now=NOW, budget_s=0)
    assert not first.finished and first.report.rows == 0
    assert CleanupRun.get().succeeded is None
    second = cleanup_run.run(dead_letters=DEAD_LETTERS, now=NOW, run_id=first.run_id)
    assert second.finished and second.run_id == first.run_id
    run = CleanupRun.get()
    assert (run.succeeded, run.deleted["uptime_check"]) == (True, 96)
    assert cleanup_run.last_success() == run.finished_at


def test_one_cleanup_at_a_time(rolled, settings):
    with psycopg.connect(settings.database_url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s, %s)", retention._LOCK)
        assert cleanup_run.run(dead_letters=DEAD_LETTERS, now=NOW).report is None
        other.execute("SELECT pg_advisory_unlock(%s, %s)", retention._LOCK)  # a closed session lets go a moment later
    assert cleanup_run.run(dead_letters=DEAD_LETTERS, now=NOW).report.rows == 96


def test_what_locations_found_goes_with_the_uptime_checks_retention(component):
    globex = Organization.create(slug="globex", name="Globex", retention={"uptime_checks": 3 * 86400})
    shop = component("shop", organization=globex)
    for age in (5, 1):
        for location in ("eu", "us"):
            db.execute_sql(
                "INSERT INTO location_check (component_id, scheduled_at, location, checked_at, seen) "
                "VALUES (%s, %s, %s, %s, 'OPERATIONAL')",
                (shop.id, NOW - age * DAY, location, NOW - age * DAY),
            )

    assert found(clean(), "location_check").rows == 2
    kept = db.execute_sql("SELECT DISTINCT scheduled_at FROM location_check").fetchall()
    assert kept == [(NOW - DAY,)]


def test_the_days_that_are_over_have_their_brin_ranges_summarized(component):
    """A BRIN scan reads every page of a range not summarized (VACUUM leaves a partition's last
    one so): the days that are over are summarized, today's is left to VACUUM."""
    api = component()
    history_partitions(days=range(-2, 1))
    indexes = [partitions.day_name("uptime_check", TODAY + offset * DAY) + "_checked_at_idx" for offset in (-2, -1, 0)]
    for offset, index in zip((-2, -1, 0), indexes, strict=True):
        add_checks(api.id, [(TODAY + offset * DAY + HOUR, TODAY + offset * DAY + HOUR, "OPERATIONAL", 10)])
        db.execute_sql("SELECT brin_desummarize_range(%s::regclass, 0)", (index,))  # as a range filled since VACUUM

    assert partitions.summarize("uptime_check", "checked_at", NOW) == 2
    assert partitions.summarize("uptime_check", "checked_at", NOW) == 0
    with db.atomic() as transaction:  # today's range is still not summarized
        assert db.execute_sql("SELECT brin_summarize_new_values(%s::regclass)", (indexes[2],)).fetchone() == (1,)
        transaction.rollback()
