"""Any ``--threads`` works: `dramatiq pulse.actors -p 1 -t 1` and `periodiq pulse.actors` against
the real RabbitMQ and PostgreSQL. The four loops run beside the one worker thread, never in it: a
component is checked every 15 s, a metrics query polled every 15 s, a status change notified, and an
on-call alert paged and escalated, each on time."""

from datetime import timedelta

from pulse import configfile
from pulse.db import db
from pulse.models import (
    Component,
    MetricDataPoint,
    MetricsQuery,
    Notification,
    OnCallAlert,
    OnCallTimeline,
    UptimeCheck,
    utcnow,
)
from tests.oncall.test_spec import STEADY
from tests.support.channels import webhook_channel
from tests.support.metrics import newrelic_queries
from tests.support.newrelic import NewRelic
from tests.support.wait import wait_for

ON_TIME = timedelta(seconds=1)  # the most a check, poll or escalation may start after its time


def checks():
    return list(UptimeCheck.select().order_by(UptimeCheck.scheduled_at))


def test_one_worker_thread_checks_polls_notifies_and_escalates_on_time(
    database, rabbit, target, vendors, provider_env, workers, schedulers
):
    text = STEADY.replace(
        'url: "http://127.0.0.1:9/", escalation_policy',
        f'url: "{target.url("/health")}", interval: 15s, failure_threshold: 1, escalation_policy',
    )
    configfile.apply(configfile.load(text))
    api = Component.get(Component.key == "api")
    Component.update(paused=True).where(Component.key == "web").execute()  # it has no target
    webhook_channel(api.organization, vendors)
    with NewRelic() as newrelic:
        newrelic_queries(api.organization, newrelic, 1, interval_seconds=15)
        later = utcnow() + timedelta(days=1)  # not due, nor given a first slot of the loop's, until set below
        Component.update(next_check_at=later).where(Component.id == api.id).execute()
        MetricsQuery.update(next_poll_at=later).execute()
        worker = workers(threads=1, env=provider_env)
        schedulers()
        # The first slots are set once the worker is ready: a slow start must not make them late.
        start = utcnow().replace(microsecond=0) + timedelta(seconds=2)
        Component.update(next_check_at=start).where(Component.id == api.id).execute()
        MetricsQuery.update(next_poll_at=start).execute()

        wait_for(lambda: len(checks()) == 1, "the first check", timeout=30)
        target.answer("/health", status=503, body=b"down")  # the second check is an outage
        wait_for(lambda: len(checks()) == 2, "the second check", timeout=30)
        points = wait_for(
            lambda: (found := list(MetricDataPoint.select().order_by(MetricDataPoint.scheduled_at))) and len(found) >= 2
            and found,
            "two polls",
        )  # fmt: skip
        vendors.wait_received("webhook", 2)  # the status change and the incident it opened
        wait_for(lambda: Notification.select().where(Notification.status == "sent").count() == 3, "carol's page")

        db.execute_sql("UPDATE oncall_alert SET next_escalation_at = now() + interval '2 seconds'")
        due = OnCallAlert.get().next_escalation_at
        wait_for(lambda: OnCallAlert.get().level == 2, "the escalation to level 2")
        vendors.wait_received("resend", 2)  # dave and bob, paged by email

    for row, slot in zip(checks(), (start, start + timedelta(seconds=15)), strict=True):
        assert row.scheduled_at == slot and timedelta(0) <= row.started_at - slot < ON_TIME
    assert [p.scheduled_at for p in points[:2]] == [start, start + timedelta(seconds=15)]
    assert all(timedelta(0) <= p.created_at - p.scheduled_at < ON_TIME for p in points[:2])
    notified = [m.json["type"] for m in vendors.received("webhook")]
    assert sorted(notified) == ["component.status_changed", "incident.opened"]
    [escalated] = OnCallTimeline.select().where(OnCallTimeline.kind == "escalated")
    assert timedelta(0) <= escalated.at - due < ON_TIME
    assert "Traceback" not in worker.output
