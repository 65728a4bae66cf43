"""A remote location as it is meant to run: over TLS (``amqps://``, the node's certificate
verified), as a RabbitMQ user holding nothing but its own queue and its own results, with no
database. A node of the test's own (`tests.support.tlsbroker`) carries the central worker's
traffic and the location's."""

import shlex
from datetime import timedelta

import pika
import pika.exceptions
import pytest

from pulse.components.status import OPERATIONAL
from pulse.config import get_settings
from pulse.db import db
from pulse.locations import RESULTS, permissions, wire
from pulse.models import UptimeCheck, utcnow
from tests.support.cli import pulse
from tests.support.tlsbroker import TlsBroker
from tests.support.wait import wait_for

PASSWORD = "location-password"
NO_DATABASE = "postgresql://nobody@127.0.0.1:9/none"  # nothing listens: any use of it would fail


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """The node, with the location eu added as its docs say: `pulse locations add eu`, then its
    user given the permissions the command prints."""
    with TlsBroker(tmp_path_factory.mktemp("tls")) as node:
        added = pulse("locations", "add", "eu", PULSE_BROKER_URL=node.url())
        assert added.returncode == 0, added.stderr
        node.ctl(node.node, "add_user", "pulse-eu", PASSWORD)
        for line in added.stdout.splitlines():
            if line.startswith("rabbitmqctl "):
                node.ctl(node.node, *shlex.split(line)[1:])
        yield node, added.stdout


def test_pulse_locations_add_prints_the_key_and_the_permissions(node):
    _, printed = node
    key = wire.key(get_settings().locations_secret, "eu")
    granted = permissions("eu")

    assert f"PULSE_LOCATION_KEY={key}" in printed.splitlines()
    assert (
        f"rabbitmqctl set_permissions -p / pulse-eu '{granted['configure']}' '{granted['write']}' '{granted['read']}'"
        in printed
    )
    assert f"rabbitmqctl set_topic_permissions -p / pulse-eu {RESULTS} '^eu$' '^$'" in printed


def test_a_remote_location_checks_over_tls_with_its_own_permissions_only(node, workers, make_component, target):
    node, _ = node
    tls = {"PULSE_BROKER_URL": node.url(), "PULSE_RABBITMQ_API_URL": "http://guest:guest@127.0.0.1:9"}
    central = workers(threads=2, env=tls)
    key = wire.key(get_settings().locations_secret, "eu")
    eu = workers(
        threads=2,
        modules=("pulse.actors",),
        env={
            "PULSE_BROKER_URL": node.url("pulse-eu", PASSWORD),
            "PULSE_LOCATION": "eu",
            "PULSE_LOCATION_KEY": key,
            "PULSE_DATABASE_URL": NO_DATABASE,
        },
    )
    slot = (utcnow() + timedelta(seconds=2)).replace(microsecond=0)
    component = make_component(target, locations=["eu"], interval_seconds=3600, next_check_at=slot)

    [check] = wait_for(lambda: list(UptimeCheck.select()), "the slot's verdict", timeout=60)

    assert (check.component_id, check.scheduled_at, check.outcome) == (component.id, slot, OPERATIONAL)
    [(location, seen)] = db.execute_sql("SELECT location, seen FROM location_check").fetchall()
    assert (location, seen) == ("eu", OPERATIONAL)
    assert len(target.received) == 1
    for output in (central.output, eu.output):
        assert "ACCESS_REFUSED" not in output and "Traceback" not in output


@pytest.mark.parametrize(
    "attempt",
    [
        lambda channel: channel.queue_delete("uptime.eu"),
        lambda channel: channel.queue_declare(
            "uptime.eu", durable=True, arguments={"x-max-length": 0, "x-overflow": "reject-publish"}
        ),
        lambda channel: channel.queue_declare("uptime.us", durable=True),
    ],
    ids=["delete its queue", "declare it again, refusing every message", "declare another queue"],
)
def test_a_locations_user_may_configure_nothing(node, attempt):
    node, _ = node
    connection = pika.BlockingConnection(pika.URLParameters(node.url("pulse-eu", PASSWORD)))
    try:
        with pytest.raises(pika.exceptions.ChannelClosedByBroker, match="ACCESS_REFUSED"):
            attempt(connection.channel())
    finally:
        connection.close()
