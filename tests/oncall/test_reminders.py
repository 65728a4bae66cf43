"""Acknowledgement reminders (`pulse.oncall.reminders`) with an injected clock: whoever acknowledged
an alert still open is reminded every ``ack_reminder`` on the policy's channels they have, once per
period however often the tick runs, never in a burst after a pause, at most MAX_REMINDERS times,
and no more once the alert is resolved."""

from datetime import timedelta

import pytest

from pulse import configfile
from pulse.errors import ConfigError
from pulse.models import Component, Event, Incident, Notification, OnCallAlert, OnCallTimeline, Person
from pulse.models.event import ONCALL_REMINDER
from pulse.notifications.render import render
from pulse.oncall import alerts, reminders
from tests.oncall.test_alerts import T
from tests.oncall.test_spec import FILE


@pytest.fixture
def alert(database):
    configfile.apply(
        configfile.load(FILE.replace("contact: [sms, email]", "contact: [sms, email]\n        ack_reminder: 1h"))
    )
    api = Component.get(Component.key == "api")
    incident = Incident.create(organization=api.organization_id, component=api, title="API down", started_at=T)
    alerts.open_alert(incident.id, T)
    return OnCallAlert.get()


def reminded() -> list[tuple[str, str]]:
    query = (
        Notification.select(Notification, Person.key)
        .join(Person)
        .switch(Notification)
        .join(Event)
        .where(Event.type == ONCALL_REMINDER)
        .order_by(Notification.id)
    )
    return [(n.person.key, n.kind) for n in query]


def test_whoever_acknowledged_is_reminded_each_period_until_it_is_resolved(alert):
    assert alert.policy["ack_reminder_seconds"] == 3600  # frozen with the alert
    alerts.acknowledge(alert.id, "alice", "cli", T + timedelta(minutes=2))
    assert reminders.due(T + timedelta(minutes=61)) == []  # not an hour since the acknowledgement
    first = reminders.due(T + timedelta(minutes=62))
    assert reminded() == [("alice", "sms"), ("alice", "email")] and len(first) == 2
    assert reminders.due(T + timedelta(minutes=62, seconds=30)) == []  # the tick again, or a second scheduler
    reminders.due(T + timedelta(minutes=122))
    assert len(reminded()) == 4 and OnCallAlert.get().reminders == 2

    event = Event.select().where(Event.type == ONCALL_REMINDER).order_by(Event.id.desc()).first()
    notice = render(event.id, event.type, event.payload, event.created_at, "Acme", None)
    assert notice.title == "Reminder: API down"
    assert f"still not resolved. When it is: pulse oncall resolve {alert.id}" in notice.summary
    steps = [s.note for s in OnCallTimeline.select().where(OnCallTimeline.kind == "reminded")]
    assert steps == ["reminder 1 to Alice by sms, email: acknowledged, still not resolved",
                     "reminder 2 to Alice by sms, email: acknowledged, still not resolved"]  # fmt: skip

    alerts.resolve(alert.id, "fixed", T + timedelta(minutes=150))
    assert reminders.due(T + timedelta(hours=5)) == [] and len(reminded()) == 4


def test_a_pause_of_the_tick_sends_one_reminder_not_a_burst_and_the_count_is_bounded(alert):
    alerts.acknowledge(alert.id, "alice", "cli", T)
    reminders.due(T + timedelta(hours=5, minutes=1))  # no tick for five hours
    assert len(reminded()) == 2 and OnCallAlert.get().reminders == 5
    reminders.due(T + timedelta(hours=5, minutes=2))
    assert len(reminded()) == 2  # the next one is due at 6 h
    reminders.due(T + timedelta(days=30))
    assert OnCallAlert.get().reminders == reminders.MAX_REMINDERS
    reminders.due(T + timedelta(days=31))
    assert len(reminded()) == 4


def test_an_alert_acknowledged_by_no_one_in_particular_or_without_the_setting_reminds_no_one(alert):
    alerts.acknowledge(alert.id, None, "web", T)
    assert reminders.due(T + timedelta(hours=2)) == []
    policy = {**alert.policy, "ack_reminder_seconds": None}  # a policy without the setting
    OnCallAlert.update(acknowledged_by="alice", policy=policy).execute()
    assert reminders.due(T + timedelta(hours=3)) == [] and reminded() == []


def test_a_reminder_period_out_of_bounds_is_refused():
    with pytest.raises(ConfigError) as raised:
        configfile.load(FILE.replace("contact: [sms, email]", "contact: [sms, email]\n        ack_reminder: 1m"))
    assert "escalation_policies[0].ack_reminder: must be between 5m and 168h, not 1m" in str(raised.value)
