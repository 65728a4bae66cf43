"""On call end to end: real `dramatiq pulse.actors` workers and `periodiq pulse.actors` scheduler, the
fake SMS, email and push vendors. An outage pages level 1, nobody acknowledges, the loop pages level
2 when its wait ends, an acknowledgement stops the escalation and the recovery resolves the alert;
each person gets exactly one page per channel per level and round."""

from datetime import timedelta

from actors.uptime import check
from pulse import configfile
from pulse.db import db
from pulse.models import Component, Notification, OnCallAlert, OnCallTimeline, Person, utcnow
from pulse.oncall import alerts
from tests.oncall.test_spec import STEADY
from tests.support.wait import wait_for


def sent() -> int:
    return Notification.select().where(Notification.status == "sent").count()


def test_an_outage_pages_escalates_and_stops_at_the_acknowledgement(
    database, rabbit, target, vendors, provider_env, workers, schedulers
):
    text = STEADY.replace(
        'url: "http://127.0.0.1:9/", escalation_policy',
        f'url: "{target.url("/health")}", failure_threshold: 1, success_threshold: 1, escalation_policy',
    )
    configfile.apply(configfile.load(text.replace("contact: [sms, email]", "contact: [sms, email, push]")))
    subscription = vendors.push_subscription()
    Person.update(push=subscription).where(Person.key == "carol").execute()
    api = Component.get(Component.key == "api")
    later = utcnow() + timedelta(days=1)  # the workers' loop leaves it alone: its checks are sent here
    Component.update(next_check_at=later).where(Component.id == api.id).execute()
    workers(threads=1, env=provider_env)  # its loops run beside the one thread
    schedulers()
    start = utcnow().replace(microsecond=0)

    target.answer("/health", status=503, body=b"down")
    check.send(api.id, start.isoformat())
    wait_for(lambda: sent() == 2, "level 1's two pages (carol by sms and push)")
    alert = OnCallAlert.get()
    assert (alert.level, alert.round, alert.status) == (1, 1, "triggered")

    # Level 1's five minutes are over: the running loop claims the escalation and level 2 is paged.
    db.execute_sql("UPDATE oncall_alert SET next_escalation_at = now() + interval '1 second'")
    wait_for(lambda: sent() == 4, "level 2's two pages (dave and bob by email)")
    assert OnCallAlert.get().level == 2

    said = alerts.acknowledge(alert.id, "dave", "cli", utcnow())
    assert said == (True, f"alert {alert.id} acknowledged by dave: no one more is paged")
    target.answer("/health", status=200, body=b'{"status": "UP"}')
    check.send(api.id, (start + timedelta(seconds=30)).isoformat())
    wait_for(lambda: OnCallAlert.get().status == "resolved", "the recovery to resolve the alert")

    assert [m.form["To"] for m in vendors.received("twilio")] == ["+14155550102"]
    assert len(vendors.received("push")) == 1
    assert sorted(m.json["to"][0] for m in vendors.received("resend")) == ["bob@acme.example", "dave@acme.example"]
    assert all("PAGE: " in m.json["subject"] for m in vendors.received("resend"))
    assert Notification.select().count() == 4 and sent() == 4
    timeline = OnCallTimeline.select().where(OnCallTimeline.alert == alert.id).order_by(OnCallTimeline.id)
    assert [s.kind for s in timeline] == [
        "opened", "paged", "paged", "escalated", "paged", "paged", "acknowledged", "resolved",
    ]  # fmt: skip
