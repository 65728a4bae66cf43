"""The on-call actors and their wiring on dramatiq's StubBroker: the outbox sends an opened incident
to `alert` and a resolved one to `resolve`, pages go out urgently, the loop's message escalates,
and an exhausted alert is told to the organization's channels, not to its subscribers."""

from datetime import timedelta

import pytest

from actors import oncall
from pulse import configfile, events
from pulse.db import db
from pulse.errors import PermanentError
from pulse.models import Component, Event, Incident, Notification, NotificationChannel, OnCallAlert, Subscriber, utcnow
from pulse.models.event import INCIDENT_OPENED, INCIDENT_RESOLVED, ONCALL_EXHAUSTED
from pulse.notifications import delivery
from pulse.rabbitmq import PRIORITY_URGENT
from schedules.oncall import ESCALATIONS
from tests.oncall.test_alerts import twin
from tests.oncall.test_spec import STEADY


@pytest.fixture
def incident(broker):
    configfile.apply(configfile.load(STEADY))
    api = Component.get(Component.key == "api")
    return Incident.create(organization=api.organization_id, component=api, title="API down", started_at=utcnow())


def emitted(incident, kind):
    with db.atomic():
        event_id = events.emit(
            kind, incident.organization_id, {}, component_id=incident.component_id, incident_id=incident.id
        )
    events.publish([event_id])
    return event_id


def sent(broker, actor_name):
    return [
        (m.queue_name, m.args, m.options.get("broker_priority"))
        for m, _ in broker.enqueued
        if m.actor_name == actor_name
    ]


def test_an_opened_incident_is_sent_to_alert_which_pages_urgently(broker, incident):
    event_id = emitted(incident, INCIDENT_OPENED)
    assert sent(broker, "broadcast") == [("notifications", (event_id,), PRIORITY_URGENT)]
    assert sent(broker, "alert") == [("oncall", (incident.id,), PRIORITY_URGENT)]

    oncall.alert.fn(incident.id)

    [page] = Notification.select()
    assert (page.kind, page.destination, page.status) == ("sms", "sms page to carol", "pending")
    assert sent(broker, "send") == [("notifications", (page.id,), PRIORITY_URGENT)]
    assert OnCallAlert.get().status == "triggered"


def test_a_resolved_incident_is_sent_to_resolve(broker, incident):
    oncall.alert.fn(incident.id)
    emitted(incident, INCIDENT_RESOLVED)
    assert sent(broker, "resolve") == [("oncall", (incident.id,), PRIORITY_URGENT)]

    oncall.resolve.fn(incident.id)

    assert OnCallAlert.get().status == "resolved"


def test_the_loops_message_escalates_the_levels_it_claimed(broker, incident):
    oncall.alert.fn(incident.id)
    second = Incident.create(
        organization=incident.organization_id,
        component=twin(incident.component),
        title="API2 down",
        started_at=utcnow(),
    )
    oncall.alert.fn(second.id)
    first, other = OnCallAlert.select().order_by(OnCallAlert.id)
    claimed = ESCALATIONS.claim(max(first.next_escalation_at, other.next_escalation_at))
    [message] = ESCALATIONS.messages(claimed)  # due together: one message
    assert (message.queue_name, message.actor_name) == ("oncall", "escalations")
    assert sorted(message.args[0]) == [[first.id, 1, 1], [other.id, 1, 1]]
    assert message.options["broker_priority"] == PRIORITY_URGENT

    oncall.escalations.fn(*message.args)
    oncall.escalations.fn(*message.args)  # redelivered: nothing more

    assert [a.level for a in OnCallAlert.select()] == [2, 2]
    level_2 = Notification.select().where(Notification.key.startswith("2."))
    assert sorted(n.destination for n in level_2) == ["email page to bob"] * 2 + ["email page to dave"] * 2
    assert sorted(args for _, args, _ in sent(broker, "send")) == sorted((n.id,) for n in Notification.select())


def test_an_escalate_message_of_the_previous_version_still_escalates(broker, incident):
    oncall.alert.fn(incident.id)
    alert = OnCallAlert.get()

    oncall.escalate.fn(alert.id, 1, 1)
    oncall.escalate.fn(alert.id, 1, 1)  # redelivered: nothing more

    assert OnCallAlert.get().level == 2
    assert sorted(n.destination for n in Notification.select()) == [
        "email page to bob",
        "email page to dave",
        "sms page to carol",
    ]


def test_a_malformed_batch_is_a_permanent_failure(broker, incident):
    for batch in ([[1, 1]], [["1", 1, 1]], {"alert": 1}):
        with pytest.raises(PermanentError, match="not a list of"):
            oncall.escalations.fn(batch)


def test_acknowledging_an_alert_that_does_not_exist_is_a_permanent_failure(broker, incident):
    with pytest.raises(PermanentError, match="no alert 42"):
        oncall.acknowledge.fn(42, "alice")
    oncall.alert.fn(incident.id)
    oncall.acknowledge.fn(OnCallAlert.get().id, "alice")
    assert (OnCallAlert.get().status, OnCallAlert.get().acknowledged_via) == ("acknowledged", "web")


def test_an_exhausted_alert_is_told_to_channels_not_subscribers_and_pages_are_never_broadcast(broker, incident):
    NotificationChannel.create(organization=incident.organization_id, key="ops", type="slack", settings={"url": "x"})
    Subscriber.create(organization=incident.organization_id, kind="email", address="fan@example.org")
    oncall.alert.fn(incident.id)
    alert = OnCallAlert.get()
    for _ in range(6):  # every level of every round waited out
        alert = OnCallAlert.get()
        oncall.escalations.fn([[alert.id, alert.level, alert.round]])

    [exhausted] = Event.select().where(Event.type == ONCALL_EXHAUSTED)
    assert sent(broker, "broadcast")[-1] == ("notifications", (exhausted.id,), PRIORITY_URGENT)
    [told] = delivery.broadcast(exhausted.id)
    assert Notification.get_by_id(told).destination == "slack channel ops"
    pages = Notification.select().where(Notification.event == alert.event_id).count()
    delivery.broadcast(alert.event_id)  # the page event, were it ever broadcast: its notifications stay the pages
    assert Notification.select().where(Notification.event == alert.event_id).count() == pages
    assert OnCallAlert.get().status == "exhausted"
    assert utcnow() - exhausted.created_at < timedelta(minutes=1)
