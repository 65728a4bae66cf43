"""The sweep of notifications no message will deliver any more: sent again, or given up."""

from datetime import timedelta

from pulse.models import Event, Notification, NotificationChannel, Organization, utcnow
from pulse.models.event import STATUS_CHANGED
from pulse.notifications import delivery, sweep


def notifications(count):
    organization = Organization.create(slug="acme", name="Acme")
    for i in range(count):
        NotificationChannel.create(organization=organization, key=f"c{i}", type="webhook", settings={"url": "x"})
    return delivery.broadcast(Event.create(organization=organization, type=STATUS_CHANGED, payload={}).id)


def test_only_the_notifications_nothing_will_deliver_are_sent_again(database):
    long_ago = utcnow() - sweep.QUIET - timedelta(minutes=1)
    waiting, claimed, fresh, hopeless, sent = notifications(5)
    Notification.update(claimed_at=long_ago).where(Notification.id == waiting).execute()
    Notification.update(status="sending", claimed_by="dead", claimed_at=long_ago).where(
        Notification.id == claimed
    ).execute()
    Notification.update(status="sending", claimed_by="alive", claimed_at=utcnow()).where(
        Notification.id == fresh
    ).execute()
    Notification.update(attempts=sweep.GIVE_UP_AFTER, claimed_at=long_ago, last_error="Webhook answered 500").where(
        Notification.id == hopeless
    ).execute()
    Notification.update(status="sent", claimed_at=long_ago).where(Notification.id == sent).execute()

    assert sweep.stale() == [waiting, claimed]
    assert sweep.stale() == []  # taken: not again before another quiet half hour

    rows = {n.id: n for n in Notification.select()}
    assert (rows[claimed].status, rows[claimed].claimed_by) == ("pending", None)
    assert (rows[fresh].status, rows[fresh].claimed_by) == ("sending", "alive")
    assert (rows[hopeless].status, rows[hopeless].last_error) == (
        "failed",
        f"Webhook answered 500; given up after {sweep.GIVE_UP_AFTER} attempts",
    )
    assert rows[sent].status == "sent"
