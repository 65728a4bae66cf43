"""Drill 5: a vendor that never answers and one that always fails do not hold up the others.

"Nothing lost" here: every notification ends sent or failed; each failed one is dead-lettered
with its reason after its retries; the healthy channel gets every message, on time.
"""

import time

from actors.notifications import broadcast
from pulse.models import Event, FailedMessage, Notification, NotificationChannel, utcnow
from pulse.models.event import STATUS_CHANGED
from tests.support.vendors import Fail, Hang, Vendors
from tests.support.wait import wait_for

EVENTS = 3


def test_a_silent_and_a_failing_vendor_are_dead_lettered_while_the_others_deliver(make_component, target, workers):
    component = make_component(target)
    organization = component.organization
    with Vendors() as vendors:
        hooks = {
            "slack": vendors.slack_hook(),
            "discord": vendors.discord_hook(),
            "webhook": vendors.webhook_receiver(),
        }
        for kind, url in hooks.items():
            NotificationChannel.create(organization=organization, key=kind, type=kind, settings={"url": url})
        vendors.script("webhook", *[Hang()] * 50)  # never answers
        vendors.script("discord", *[Fail(500)] * 50)  # always fails
        # Two threads, one second per delivery attempt, two retries.
        workers(threads=2, env={"PULSE_NOTIFY_TIMEOUT_S": "1", "PULSE_MAX_RETRIES": "2"})

        started = time.monotonic()
        for _ in range(EVENTS):
            event = Event.create(  # sent here, as its writer would: the outbox loop leaves it alone
                organization=organization, component=component, type=STATUS_CHANGED, payload={}, sent_at=utcnow()
            )
            broadcast.send(event.id)
        slack = vendors.wait_received("slack", EVENTS, timeout=30)
        dead = wait_for(
            lambda: (rows := list(FailedMessage.select())) and len(rows) == 2 * EVENTS and rows,
            "6 dead letters",
            timeout=90,
        )

    # The healthy channel was paced (1.1 s apart), not starved by the two threads' hung attempts.
    assert slack[-1].at - started < 2 * 1.1 + 3
    outcomes = {}
    for n in Notification.select().order_by(Notification.id):
        outcomes.setdefault(n.kind, []).append((n.status, n.attempts))
    assert outcomes == {
        "slack": [("sent", 1)] * EVENTS,
        "discord": [("failed", 3)] * EVENTS,
        "webhook": [("failed", 3)] * EVENTS,
    }
    reasons = sorted((d.actor_name, d.error_type, d.error_message, d.attempts) for d in dead)
    assert reasons == sorted(
        [("send", "TransientError", "Discord answered 500: 500: Internal Server Error (code 0)", 3)] * EVENTS
        + [("send", "TransientError", "Webhook: timed out after 1.0 s", 3)] * EVENTS
    )
