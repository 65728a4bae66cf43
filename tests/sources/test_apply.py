"""A source's events applied to its on-call alerts (`pulse.sources.apply`), recorded as the service
records them: a trigger opens an alert routed by its labels and pages level 1; a trigger of an open
key adds to it and pages no one; acknowledge and resolve act on the open alert of their key; each
event applies once."""

from datetime import UTC, datetime, timedelta

from pulse.models import AlertEvent, AlertSource, Notification, OnCallAlert, OnCallTimeline, Person
from pulse.sources import apply, due, formats, record
from tests.sources import bodies
from tests.sources.conftest import ALERTMANAGER_TOKEN, EVENTS_TOKEN

T = datetime(2026, 12, 4, 12, tzinfo=UTC)


def send(kind, token, body, at=T):
    """What `pulse serve` does with a request, then what the loop and a worker do."""
    assert record.record(token, kind, formats.parse(kind, body), at)
    [(source_id, _)] = due.claim(at)
    return apply.apply(source_id, at)


def paged():
    return [
        (p.person.key, p.kind) for p in Notification.select(Notification, Person).join(Person).order_by(Notification.id)
    ]


def steps(alert):
    return [s.kind for s in OnCallTimeline.select().where(OnCallTimeline.alert == alert.id).order_by(OnCallTimeline.id)]


def test_a_trigger_pages_once_however_often_it_comes_and_resolve_ends_it(sources):
    opened = send("alertmanager", ALERTMANAGER_TOKEN, bodies.alertmanager())
    alert = OnCallAlert.get()
    assert (alert.status, alert.title, alert.dedup_key) == (
        "triggered",
        "p99 > 2s <api & web>",
        '{}:{alertname="HighLatency"}',
    )
    assert alert.incident_id is None and alert.source.key == "prometheus"
    assert paged() == [("carol", "sms")] and opened.notifications == [n.id for n in Notification.select()]

    # Alertmanager's retry of the same body, then its repeat: nothing more, not even on the timeline.
    assert send("alertmanager", ALERTMANAGER_TOKEN, bodies.alertmanager(), T + timedelta(seconds=1)).notifications == []
    assert send("alertmanager", ALERTMANAGER_TOKEN, bodies.alertmanager(), T + timedelta(hours=4)).notifications == []
    assert paged() == [("carol", "sms")] and steps(alert) == ["opened", "paged"]

    send("alertmanager", ALERTMANAGER_TOKEN, bodies.alertmanager("resolved"), T + timedelta(hours=5))
    alert = OnCallAlert.get()
    assert (alert.status, alert.resolved_at) == ("resolved", T + timedelta(hours=5))
    assert (
        steps(alert)[-1] == "resolved"
        and "Prometheus resolved it" in OnCallTimeline.select().order_by(OnCallTimeline.id.desc()).first().note
    )
    assert Notification.get().status == "cancelled"  # the page not sent yet

    # The group fires again: a new alert, paged again.
    send("alertmanager", ALERTMANAGER_TOKEN, bodies.alertmanager(), T + timedelta(hours=6))
    assert OnCallAlert.select().where(OnCallAlert.status == "triggered").count() == 1
    assert paged() == [("carol", "sms")] * 2


def test_a_trigger_that_says_something_new_is_on_the_timeline(sources):
    send("events", EVENTS_TOKEN, bodies.event())
    send("events", EVENTS_TOKEN, bodies.event(summary="Disk 97% on db-1"), T + timedelta(minutes=1))
    alert = OnCallAlert.get()
    last = OnCallTimeline.select().where(OnCallTimeline.alert == alert.id).order_by(OnCallTimeline.id.desc()).first()
    assert (last.kind, last.note) == ("updated", "App sent it again: Disk 97% on db-1")
    assert len(paged()) == 1


def test_routes_choose_the_policy_by_the_alerts_labels(sources):
    send("events", EVENTS_TOKEN, bodies.event(group="database"))
    send("events", EVENTS_TOKEN, bodies.event(key="web-5xx", group="web"))
    by_key = {a.dedup_key: a.policy["key"] for a in OnCallAlert.select()}
    assert by_key == {"disk-db-1": "dba", "web-5xx": "default"}
    assert sorted(paged()) == [("carol", "sms"), ("dave", "email")]


def test_acknowledge_and_resolve_act_on_the_open_alert_of_their_key_only(sources):
    send("events", EVENTS_TOKEN, bodies.event())
    send("events", EVENTS_TOKEN, bodies.event("acknowledge", key="another"))  # no such alert: dropped
    assert OnCallAlert.get().status == "triggered"
    send("events", EVENTS_TOKEN, bodies.event("acknowledge"), T + timedelta(minutes=1))
    alert = OnCallAlert.get()
    assert (alert.status, alert.acknowledged_via, alert.next_escalation_at) == ("acknowledged", "events", None)
    send("events", EVENTS_TOKEN, bodies.event(), T + timedelta(minutes=2))  # acknowledged: no page again
    assert len(paged()) == 1
    send("events", EVENTS_TOKEN, bodies.event("resolve"), T + timedelta(minutes=3))
    assert OnCallAlert.get().status == "resolved"


def test_events_apply_once_in_the_order_they_arrived(sources):
    for action, minute in (("trigger", 0), ("resolve", 1), ("trigger", 2)):
        assert record.record(
            EVENTS_TOKEN, "events", formats.parse("events", bodies.event(action)), T + timedelta(minutes=minute)
        )
    [(source_id, since)] = due.claim(T + timedelta(minutes=3))
    assert since == T and due.claim(T + timedelta(minutes=3)) == []  # claimed: pending cleared
    apply.apply(source_id, T + timedelta(minutes=3))
    assert apply.apply(source_id, T + timedelta(minutes=3)).notifications == []  # a redelivered message
    assert [a.status for a in OnCallAlert.select().order_by(OnCallAlert.id)] == ["resolved", "triggered"]
    assert len(paged()) == 2 and AlertEvent.select().where(~AlertEvent.applied).count() == 0


def test_an_event_whose_message_was_lost_is_handed_over_again(sources):
    assert record.record(EVENTS_TOKEN, "events", formats.parse("events", bodies.event()), T)
    assert len(due.claim(T)) == 1  # ... and its message lost with a broker's disk
    assert due.redrive(T + due.OVERDUE) == []  # not yet overdue
    [source_id] = due.redrive(T + due.OVERDUE + timedelta(seconds=1))
    assert AlertSource.get_by_id(source_id).pending_at is not None


def test_a_token_of_another_kind_or_none_records_nothing(sources):
    received = formats.parse("events", bodies.event())
    assert not record.record(ALERTMANAGER_TOKEN, "events", received, T)
    assert not record.record("x" * 32, "events", received, T)
    assert AlertEvent.select().count() == 0 and due.claim(T) == []
