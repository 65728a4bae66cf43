"""Drill 23: a location's account turned hostile, while the central workers and an honest location work.

The location ``evil`` is added as the docs say (`pulse locations add evil`) and its RabbitMQ user
is given exactly the printed permissions on the tests' vhost. No worker of its own runs: the test
holds its account (its user, its key) and, with it, reads the batches sent to it and publishes
to ``pulse.results``:

- a vote whose options carry a far-future ``eta`` (that would hold the central consumer's
  prefetch), and votes whose options carry a huge ``max_retries`` and a tiny ``min_backoff``;
- a result with ``ms: Infinity`` and one whose reason carries control characters;
- votes on slots of the future (the next ones, 2,880 ahead, one dated 2999) under the nonce of
  a batch it was really sent;
- and it tries to delete its queue and to declare it again to refuse every message.

What it proves, in rows: RabbitMQ refuses the user any change to its queue; the central workers
check a component of another organization at every slot (no slot missed, none UNKNOWN); the
honest location ``us`` gets every batch and answers each slot; the votes on the future count for
nothing (every verdict OPERATIONAL); nothing is held unacked, retried or dead-lettered in
``uptime``; the two bad messages are one WARNING line each, and there is no traceback.
"""

import json
import shlex
import subprocess
from datetime import timedelta
from urllib.parse import urlsplit

import pika
import pika.exceptions
import pytest

from pulse.components.status import MAJOR_OUTAGE, OPERATIONAL
from pulse.config import get_settings
from pulse.db import db
from pulse.locations import RESULTS, dispatch, queue, wire
from pulse.models import Organization, UptimeCheck, utcnow
from pulse.rabbitmq import admin, channel, xq
from tests.support.cli import pulse
from tests.support.env import NAMESPACE
from tests.support.wait import wait_for

INTERVAL = 15  # seconds: the shortest interval a component may have
SLOTS = 4  # slots watched: the attack is made in the first
PASSWORD = "evil-password"
FAR = 32503680000000  # ms since the epoch: the year 3000


def rabbitmqctl(*args):
    subprocess.run(["rabbitmqctl", *args], check=True, capture_output=True, timeout=120)


@pytest.fixture
def evil_url():
    """The broker URL of the location evil's user, holding exactly what `pulse locations add` printed."""
    user = f"pulse-evil-{NAMESPACE}"  # users are the node's: one per tox environment and xdist worker
    added = pulse("locations", "add", "evil", "--user", user)
    assert added.returncode == 0, added.stderr
    rabbitmqctl("add_user", user, PASSWORD)
    try:
        printed = [shlex.split(line)[1:] for line in added.stdout.splitlines() if line.startswith("rabbitmqctl ")]
        assert [command[0] for command in printed] == ["set_permissions", "set_topic_permissions"]
        for command in printed:
            rabbitmqctl(*command)
        parts = urlsplit(get_settings().broker_url)
        yield parts._replace(netloc=f"{user}:{PASSWORD}@{parts.hostname}:{parts.port}").geturl()
    finally:
        rabbitmqctl("delete_user", user)


class Account:
    """What someone holding the location evil's account can do, with a channel of its user."""

    def __init__(self, url):
        self.url = url
        self.connection = pika.BlockingConnection(pika.URLParameters(url))
        self.channel = self.connection.channel()
        self.channel.confirm_delivery()
        self.key = wire.key(get_settings().locations_secret, "evil")

    def batch(self):
        """The next batch sent to evil, opened, or None."""
        method, _, body = self.channel.basic_get(queue("evil"), auto_ack=True)
        return None if method is None else wire.unseal(dramatiq_args(body)[0], self.key)

    def send(self, body):
        self.channel.basic_publish(RESULTS, "evil", body, pika.BasicProperties(delivery_mode=2))

    def refused(self, attempt):
        """``attempt(channel)`` on a channel of its own: the text RabbitMQ closed it with."""
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refusal:
            attempt(self.connection.channel())
        return str(refusal.value)

    def close(self):
        self.connection.close()


def dramatiq_args(body):
    return json.loads(body)["args"]


def message(args, **options):
    fields = {"queue_name": "uptime", "actor_name": "location_results", "args": args, "kwargs": {}}
    return json.dumps(fields | {"options": options, "message_id": "mine", "message_timestamp": 0}).encode()


def vote(component, slot, seen=MAJOR_OUTAGE, reason="down from here", ms=5):
    return [component.id, slot.isoformat(), slot.isoformat(), seen, reason, ms, None, False]


def verdicts(component):
    query = UptimeCheck.select().where(UptimeCheck.component == component.id).order_by(UptimeCheck.scheduled_at)
    return [(c.scheduled_at, c.outcome) for c in query]


def answers(component, location):
    """(slot, seen) of each of the location's rows for the component, oldest first."""
    return db.execute_sql(
        "SELECT scheduled_at, seen FROM location_check WHERE component_id = %s AND location = %s ORDER BY 1",
        (component.id, location),
    ).fetchall()


@pytest.mark.minutes
def test_a_hostile_location_stops_no_one_and_its_votes_on_the_future_count_for_nothing(
    evil_url, workers, make_component, target, settings
):
    central = workers(threads=2)
    with channel(settings) as ch:  # us's queue, as `pulse locations add us` makes it
        dispatch.declare(ch, "us", settings.queue_type)
    us_key = wire.key(settings.locations_secret, "us")
    us = workers(threads=2, modules=("pulse.actors",), env={"PULSE_LOCATION": "us", "PULSE_LOCATION_KEY": us_key})
    first = (utcnow() + timedelta(seconds=3)).replace(microsecond=0)
    shared = make_component(
        target, key="shared", locations=["evil", "us"], quorum=1, interval_seconds=INTERVAL, next_check_at=first
    )
    other = Organization.create(slug="other", name="Other")
    elsewhere = make_component(
        target, organization=other, key="central", interval_seconds=INTERVAL, next_check_at=first
    )
    evil = Account(evil_url)
    try:
        sent = wait_for(evil.batch, "evil's first batch", timeout=INTERVAL, every=0.1)
        [check] = sent.checks
        future = [check.slot + timedelta(seconds=INTERVAL * n) for n in (1, 2, 3, 2880)] + [
            check.slot.replace(year=2999)
        ]

        refusals = [
            evil.refused(lambda ch: ch.queue_delete(queue("evil"))),
            evil.refused(
                lambda ch: ch.queue_declare(
                    queue("evil"), durable=True, arguments={"x-max-length": 0, "x-overflow": "reject-publish"}
                )
            ),
        ]
        evil.send(message(["evil", sent.nonce, [vote(shared, check.slot, OPERATIONAL, None)]], eta=FAR))
        evil.send(message(["evil", sent.nonce, [vote(shared, s) for s in future]], max_retries=10**9, min_backoff=1))
        evil.send(message(["evil", sent.nonce, [vote(shared, check.slot, ms=float("inf"))]]))
        evil.send(message(["evil", sent.nonce, [vote(shared, check.slot, reason="down\x1b[2J\r\nfrom here")]]))

        # Each slot's verdict comes at the latest at its decide_by (timeout and grace: 7 s).
        last = first + timedelta(seconds=INTERVAL * (SLOTS - 1))
        for component in (shared, elsewhere):
            wait_for(
                lambda c=component: any(slot >= last for slot, _ in verdicts(c)),
                f"{SLOTS} slots of {component.key}",
                timeout=INTERVAL * SLOTS + 15,
                every=0.5,
            )
        wait_for(lambda: any(slot >= last for slot, _ in answers(shared, "us")), "us's answer to the last slot")
        held = wait_for(  # the rebuilt messages were run, not held for their eta
            lambda: (rows := admin.queue_counts(settings, ["uptime"])[0]) and rows[0].unacked == 0 and rows,
            "nothing unacked in uptime",
        )
    finally:
        evil.close()

    assert all("ACCESS_REFUSED" in refusal for refusal in refusals)
    slots = [first + timedelta(seconds=INTERVAL * n) for n in range(SLOTS)]
    assert verdicts(elsewhere)[:SLOTS] == [(slot, OPERATIONAL) for slot in slots]  # none missed, none UNKNOWN
    assert verdicts(shared)[:SLOTS] == [(slot, OPERATIONAL) for slot in slots]  # the future votes: nothing
    assert answers(shared, "us")[:SLOTS] == [(slot, OPERATIONAL) for slot in slots]  # every batch reached us
    assert answers(shared, "evil")[:SLOTS] == [(first, OPERATIONAL)] + [(slot, None) for slot in slots[1:]]  # absent
    [uptime] = held
    assert (uptime.ready, uptime.delayed, uptime.dead) == (0, 0, 0)  # nothing waiting, retried, dead-lettered
    assert admin.ready_counts(settings, [xq(queue("us"))])[xq(queue("us"))] == 0
    dropped = [json.loads(line) for line in central.output.splitlines() if "from location 'evil' dropped" in line]
    assert [line["level"] for line in dropped] == ["warning", "warning"]
    assert "NaN or Infinity" in dropped[0]["msg"] and "reason has control characters" in dropped[1]["msg"]
    assert "\x1b" not in central.output
    for output in (central.output, us.output):
        assert "Traceback" not in output
