"""On-call alerts with an injected clock: level 1 paged at once, each level after its wait, repeat and
exhaustion, acknowledgement and resolution at any point, the policy frozen, empty schedules fallen
through; the pages are notification rows that the delivery sends to each person."""

from datetime import UTC, datetime, timedelta

import pytest

from pulse import configfile
from pulse.models import Component, Event, Incident, Notification, OnCallAlert, OnCallTimeline, Person, utcnow
from pulse.models.event import ONCALL_EXHAUSTED
from pulse.notifications import delivery
from pulse.oncall import alerts, due
from pulse.oncall import gauges as oncall_gauges  # noqa: F401 - registers the gauge FromDatabase reads
from pulse.telemetry.gauges import FromDatabase
from tests.oncall.test_spec import FILE

# Wednesday 2026-12-02 12:00 in New York: carol's week on `primary`; day 335 on `secondary`: bob.
T = datetime.fromisoformat("2026-12-02T12:00:00-05:00")


@pytest.fixture
def incident(database):
    configfile.apply(configfile.load(FILE))
    api = Component.get(Component.key == "api")
    return Incident.create(organization=api.organization_id, component=api, title="API down", started_at=T)


def twin(component: Component, key: str = "api2") -> Component:
    """Another component like ``component`` (of its escalation policy), keyed ``key``."""
    component.id, component.key = None, key
    component.save(force_insert=True)
    return component


def pages() -> list[tuple[str, str, str]]:
    """Every page so far: (key without the person's id, person, channel)."""
    rows = Notification.select(Notification, Person.key).join(Person).order_by(Notification.id)
    return [(".".join(n.key.split(".")[:2]), n.person.key, n.kind) for n in rows]


def steps(alert_id: int) -> list[tuple[str, str]]:
    rows = OnCallTimeline.select().where(OnCallTimeline.alert == alert_id).order_by(OnCallTimeline.id)
    return [(s.kind, s.note) for s in rows]


def escalate_when_due(at: datetime) -> alerts.Outcome:
    """What the loop does at ``at``: claim what is due, escalate it."""
    [((alert_id, level, round_), _)] = due.claim(at)
    return alerts.escalate(alert_id, level, round_, at)


def test_level_1_is_paged_at_once_and_each_level_after_the_wait_of_the_one_before(incident):
    opened = alerts.open_alert(incident.id, T)
    alert = OnCallAlert.get()
    assert (alert.status, alert.level, alert.round, alert.next_escalation_at) == (
        "triggered",
        1,
        1,
        T + timedelta(minutes=5),
    )
    assert pages() == [("1.1", "carol", "sms")]  # carol has a phone only; the policy contacts by sms and email
    assert opened.notifications == [n.id for n in Notification.select()]
    assert steps(alert.id) == [("opened", "API down (API); escalation policy default"), ("paged", "Carol by sms")]

    assert due.claim(T + timedelta(minutes=4, seconds=59)) == []
    escalate_when_due(T + timedelta(minutes=5))
    assert pages()[1:] == [("2.1", "dave", "email"), ("2.1", "bob", "email")]  # dave, then secondary's bob
    alert = OnCallAlert.get()
    assert (alert.level, alert.round, alert.next_escalation_at) == (2, 1, T + timedelta(minutes=15))
    assert steps(alert.id)[2] == ("escalated", "no acknowledgement within 5m")


def test_an_escalation_sent_twice_or_late_pages_once(incident):
    alerts.open_alert(incident.id, T)
    alert = OnCallAlert.get()
    at = T + timedelta(minutes=5)
    [((alert_id, level, round_), due_at)] = due.claim(at)
    assert (alert_id, level, round_, due_at) == (alert.id, 1, 1, at)
    assert due.claim(at) == []  # claimed: a second scheduler finds nothing

    first = alerts.escalate(alert.id, 1, 1, at)
    again = alerts.escalate(alert.id, 1, 1, at + timedelta(seconds=1))
    assert len(first.notifications) == 2 and again == alerts.Outcome()
    assert len(pages()) == 3


def test_escalations_due_together_are_done_together_each_once(incident):
    """A batch: alerts at different levels and rounds, one acknowledged meanwhile, one key stale
    (its alert moved on already), one exhausting; sent twice, it pages once."""
    opened = []
    for n in range(4):
        component = twin(incident.component, f"api{n}")
        other = Incident.create(organization=incident.organization_id, component=component, title="down", started_at=T)
        alerts.open_alert(other.id, T)
        opened.append(OnCallAlert.get(OnCallAlert.incident == other.id).id)
    moving, acknowledged, stale, exhausting = opened
    alerts.acknowledge(acknowledged, "alice", "cli", T)
    last = OnCallAlert.update(level=2, round=3).where(OnCallAlert.id == exhausting)
    last.execute()
    at = T + timedelta(minutes=5)
    alerts.escalate(stale, 1, 1, at)
    before = len(pages())
    batch = [(moving, 1, 1), (acknowledged, 1, 1), (stale, 1, 1), (exhausting, 2, 3)]

    outcome = alerts.escalate_all(batch, at + timedelta(seconds=1))
    again = alerts.escalate_all(batch, at + timedelta(seconds=2))

    assert again == alerts.Outcome()
    assert pages()[before:] == [("2.1", "dave", "email"), ("2.1", "bob", "email")]  # the moving alert's, once
    assert outcome.notifications == [n.id for n in Notification.select().order_by(Notification.id)][before:]
    [event] = Event.select().where(Event.type == ONCALL_EXHAUSTED)
    assert outcome.events == [event.id] and event.payload["alert"] == exhausting
    got = {a.id: (a.status, a.level, a.round) for a in OnCallAlert.select()}
    assert [got[i] for i in opened] == [
        ("triggered", 2, 1),
        ("acknowledged", 1, 1),
        ("triggered", 2, 1),
        ("exhausted", 2, 3),
    ]
    assert OnCallAlert.get_by_id(moving).next_escalation_at == at + timedelta(seconds=1, minutes=10)
    assert [kind for kind, _ in steps(moving)][-3:] == ["escalated", "paged", "paged"]
    assert [kind for kind, _ in steps(stale)].count("escalated") == 1
    assert [kind for kind, _ in steps(acknowledged)][-1] == "acknowledged"
    assert [kind for kind, _ in steps(exhausting)][-2:] == ["escalated", "exhausted"]


def test_after_the_last_level_the_policy_repeats_then_the_alert_is_exhausted_and_stays_open(incident):
    alerts.open_alert(incident.id, T)
    at = T
    for wait in [5, 10] * 3:  # three rounds (repeat: 2) of level 1 (5m) and level 2 (10m)
        at += timedelta(minutes=wait)
        outcome = escalate_when_due(at)
    assert [key for key, _, _ in pages()] == ["1.1", "2.1", "2.1", "1.2", "2.2", "2.2", "1.3", "2.3", "2.3"]
    alert = OnCallAlert.get()
    assert (alert.status, alert.level, alert.round, alert.next_escalation_at) == ("exhausted", 2, 3, None)
    [event] = Event.select().where(Event.type == ONCALL_EXHAUSTED)
    assert outcome == alerts.Outcome(events=[event.id])
    assert (event.payload["policy"], event.payload["rounds"], event.payload["alert"]) == ("default", 3, alert.id)
    assert steps(alert.id)[-1] == ("exhausted", "no one acknowledged after 3 rounds of the policy")
    assert due.claim(at + timedelta(hours=1)) == []

    changed, said = alerts.acknowledge(alert.id, "alice", "cli", at + timedelta(minutes=1))  # still open: it can be
    assert changed and said == f"alert {alert.id} acknowledged by alice: no one more is paged"


@pytest.mark.parametrize("minutes", [0, 5, 14])
def test_an_acknowledgement_at_any_level_stops_the_escalation_and_a_second_one_says_so(incident, minutes):
    alerts.open_alert(incident.id, T)
    alert = OnCallAlert.get()
    if minutes >= 5:
        escalate_when_due(T + timedelta(minutes=5))
    paged = len(pages())

    at = T + timedelta(minutes=minutes)
    assert alerts.acknowledge(alert.id, "bob", "cli", at) == (
        True,
        f"alert {alert.id} acknowledged by bob: no one more is paged",
    )
    assert alerts.acknowledge(alert.id, None, "web", at) == (
        False,
        f"alert {alert.id} was acknowledged already, by bob at {at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC",
    )
    assert due.claim(T + timedelta(days=1)) == []
    assert alerts.escalate(alert.id, *(OnCallAlert.get().level, 1), T + timedelta(days=1)) == alerts.Outcome()
    assert len(pages()) == paged
    alert = OnCallAlert.get()
    assert (alert.status, alert.acknowledged_by, alert.acknowledged_via, alert.next_escalation_at) == (
        "acknowledged",
        "bob",
        "cli",
        None,
    )
    cancelled = Notification.select().where(Notification.status == "cancelled")
    assert len(cancelled) == paged  # none was sent: every page still pending is cancelled
    assert {n.last_error for n in cancelled} == {"not sent: the alert was acknowledged first"}
    assert steps(alert.id)[-1] == ("acknowledged", f"by bob (cli); {paged} page(s) not sent yet were cancelled")


def test_the_resolved_incident_resolves_the_alert_mid_escalation(incident):
    alerts.open_alert(incident.id, T)
    escalate_when_due(T + timedelta(minutes=5))
    alert = OnCallAlert.get()

    assert alerts.resolve_incident(incident.id, T + timedelta(minutes=7))
    assert not alerts.resolve_incident(incident.id, T + timedelta(minutes=8))  # twice: nothing more
    assert due.claim(T + timedelta(hours=1)) == []
    assert alerts.escalate(alert.id, 2, 1, T + timedelta(minutes=15)) == alerts.Outcome()
    assert alerts.acknowledge(alert.id, "alice", "cli", T + timedelta(minutes=9))[0] is False
    assert OnCallAlert.get().status == "resolved" and len(pages()) == 3
    assert steps(alert.id)[-1] == ("resolved", "the incident was resolved; 3 page(s) not sent yet were cancelled")


def test_the_policy_is_frozen_when_the_alert_opens(incident):
    alerts.open_alert(incident.id, T)
    changed = FILE.replace(
        "{targets: [{person: dave}, {schedule: secondary}], wait: 10m}", "{targets: [{person: alice}], wait: 1m}"
    )
    configfile.apply(configfile.load(changed.replace("wait: 5m", "wait: 1m")))

    assert due.claim(T + timedelta(minutes=1)) == []  # level 1's wait is still 5 minutes
    escalate_when_due(T + timedelta(minutes=5))
    assert pages()[1:] == [("2.1", "dave", "email"), ("2.1", "bob", "email")]
    assert OnCallAlert.get().next_escalation_at == T + timedelta(minutes=15)


def test_a_level_with_no_one_on_call_falls_through_to_the_next_at_once(database):
    empty = FILE.replace(
        "start: 2026-01-05\n            members: [alice, bob, carol]",
        "start: 2030-01-07\n            members: [alice, bob, carol]",
    )
    empty = empty.replace(
        "start: 2026-01-05\n            members: [dave]", "start: 2030-01-07\n            members: [dave]"
    )
    empty = empty.replace(
        "      - {person: bob, from",
        '      - {person: bob, from: "2030-12-24T00:00:00-05:00", until: "2030-12-26T00:00:00-05:00"}\n      #',
    )
    configfile.apply(configfile.load(empty))
    api = Component.get(Component.key == "api")
    incident = Incident.create(organization=api.organization_id, component=api, title="API down", started_at=T)

    alerts.open_alert(incident.id, T)
    alert = OnCallAlert.get()
    assert (alert.level, alert.next_escalation_at) == (2, T + timedelta(minutes=10))
    assert pages() == [("2.1", "dave", "email"), ("2.1", "bob", "email")]
    assert steps(alert.id)[1:4] == [
        ("skipped", "no one is on call on the schedule primary"),
        ("skipped", "no one to page: on to the next level"),
        ("paged", "Dave by email"),
    ]


def test_no_one_on_any_level_exhausts_the_alert_at_once(database):
    alone = FILE.replace(
        "{targets: [{person: dave}, {schedule: secondary}], wait: 10m}", "{targets: [{schedule: primary}]}"
    )
    alone = alone.replace("start: 2026-01-05", "start: 2030-01-07").replace("2026-12-2", "2030-12-2")
    configfile.apply(configfile.load(alone))
    api = Component.get(Component.key == "api")
    incident = Incident.create(organization=api.organization_id, component=api, title="API down", started_at=T)

    outcome = alerts.open_alert(incident.id, T)
    alert = OnCallAlert.get()
    assert (alert.status, alert.level, alert.round) == ("exhausted", 2, 3)
    assert outcome.notifications == [] and len(outcome.events) == 1
    assert [kind for kind, _ in steps(alert.id)].count("skipped") == 12  # 2 levels x 3 rounds, 2 notes each


def test_an_alert_opens_once_and_a_second_message_resends_what_is_unsent(incident):
    first = alerts.open_alert(incident.id, T)
    again = alerts.open_alert(incident.id, T + timedelta(seconds=2))
    assert again.notifications == first.notifications and OnCallAlert.select().count() == 1
    Notification.update(status="sent").execute()
    assert alerts.open_alert(incident.id, T + timedelta(seconds=3)) == alerts.Outcome()


def test_no_alert_without_a_policy_or_for_a_resolved_incident(incident):
    web = Component.get(Component.key == "web")
    quiet = Incident.create(organization=web.organization_id, component=web, title="Web down", started_at=T)
    over = Incident.create(
        organization=incident.organization_id, component=incident.component_id, title="Old", started_at=T, resolved_at=T
    )
    assert alerts.open_alert(quiet.id, T) == alerts.open_alert(over.id, T) == alerts.Outcome()
    assert OnCallAlert.select().count() == 0


def test_acknowledging_names_what_does_not_exist(incident):
    alerts.open_alert(incident.id, T)
    alert = OnCallAlert.get()
    with pytest.raises(LookupError, match="no person 'eve' in the alert's organization"):
        alerts.acknowledge(alert.id, "eve", "cli", T)
    with pytest.raises(LookupError, match="no alert 999"):
        alerts.acknowledge(999, None, "cli", T)
    assert OnCallAlert.get().status == "triggered"


def test_an_escalation_overdue_by_a_minute_is_counted_and_claimed_again(incident, settings):
    alerts.open_alert(incident.id, T)
    due.claim(T + timedelta(minutes=5))  # its message is lost
    assert due.redrive(T + timedelta(minutes=6)) == []
    assert due.redrive(T + timedelta(minutes=6, seconds=1)) == [OnCallAlert.get().id]
    for late, overdue in [(30, 0), (90, 1)]:  # seconds past its time; counted after a minute
        OnCallAlert.update(next_escalation_at=utcnow() - timedelta(seconds=late)).execute()
        gauges = {gauge.name: gauge for gauge in FromDatabase(settings).collect()}
        assert gauges["oncall_escalations_overdue"].samples[0].value == overdue
    OnCallAlert.update(next_escalation_at=T + timedelta(minutes=5)).execute()
    escalate_when_due(T + timedelta(minutes=6, seconds=1))
    assert len(pages()) == 3


def test_a_page_reaches_the_person_on_each_channel_with_what_to_do(incident, vendors, config):
    Person.update(phone="+14155550104").where(Person.key == "dave").execute()
    alerts.open_alert(incident.id, T)
    outcome = escalate_when_due(T + timedelta(minutes=5))
    for notification_id in outcome.notifications:
        delivery.deliver(notification_id, "m1", config, at=None, final=False)

    alert = OnCallAlert.get()
    [sms] = vendors.received("twilio")
    assert sms.form["To"] == "+14155550104"
    assert "PAGE: API down" in sms.form["Body"] and f"pulse oncall ack {alert.id}" in sms.form["Body"]
    emails = vendors.received("resend")
    assert sorted(m.json["to"][0] for m in emails) == ["bob@acme.example", "dave@acme.example"]
    assert all("major outage" in m.json["text"] for m in emails)
    assert {n.status for n in Notification.select()} >= {"sent"}
