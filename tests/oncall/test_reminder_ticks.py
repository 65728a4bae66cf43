"""The reminder ticks through real workers and the fake vendors: `remind_tick` reminds the person
who acknowledged an alert by SMS, `repeat_tick` tells a webhook channel a component is still down.
(That a tick sent twice reminds and repeats once is tests/oncall/test_reminders.py's and
tests/components/test_repeats.py's.)"""

from datetime import timedelta

from pulse import configfile
from pulse.models import Component, Incident, Notification, OnCallAlert, utcnow
from pulse.oncall import alerts
from schedules.oncall import remind_tick
from schedules.outbox import repeat_tick
from tests.oncall.test_spec import STEADY
from tests.support.channels import webhook_channel
from tests.support.wait import wait_for


def test_the_ticks_remind_and_repeat_through_workers(database, rabbit, vendors, provider_env, workers):
    text = STEADY.replace("contact: [sms, email]", "contact: [sms, email]\n        ack_reminder: 1h")
    configfile.apply(
        configfile.load(
            text.replace("escalation_policy: default}", "escalation_policy: default, repeat_while_down: 1h}")
        )
    )
    api = Component.get(Component.key == "api")
    webhook_channel(api.organization, vendors)
    started = utcnow() - timedelta(hours=2, minutes=1)
    incident = Incident.create(organization=api.organization_id, component=api, title="API down", started_at=started)
    alerts.open_alert(incident.id, started)  # pages carol (not sent: no worker yet)
    alert = OnCallAlert.get()
    alerts.acknowledge(alert.id, "carol", "sms", started + timedelta(minutes=1))  # the page is cancelled
    workers("--queues", "oncall", "notifications", threads=1, env=provider_env)

    remind_tick.send()
    repeat_tick.send()
    wait_for(lambda: len(vendors.received("twilio")) == 1, "carol's reminder by SMS")
    wait_for(lambda: len(vendors.received("webhook")) == 1, "the channel told API is still down")
    assert "Reminder: API down" in vendors.received("twilio")[0].form["Body"]
    assert vendors.received("webhook")[0].json["type"] == "component.still_down"
    assert vendors.received("webhook")[0].json["title"] == "Still down: API down"
    assert vendors.received("twilio")[0].form["To"] == "+14155550102"  # carol, who acknowledged
    sent = Notification.select().where(Notification.status == "sent")
    wait_for(lambda: sent.count() == 2, "both recorded as sent")  # recorded once the vendor has answered
