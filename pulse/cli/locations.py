"""`pulse locations add NAME`: make a location's queue and print what its workers need (their
key, their RabbitMQ user's permissions); `pulse locations key NAME`: its key alone."""

from __future__ import annotations

import shlex

import click

from pulse.cli.output import echo, fail
from pulse.config import get_settings


@click.group()
def locations() -> None:
    """Locations that check components from elsewhere (docs/locations.md)."""


@locations.command("add")
@click.argument("name")
@click.option("--user", default=None, help="Its RabbitMQ user (default: pulse-NAME).")
def add(name: str, user: str | None) -> None:
    """Make location NAME's queue on RabbitMQ and print what its workers need: PULSE_LOCATION,
    PULSE_LOCATION_KEY, and the rabbitmqctl commands that give their user its own queue and its
    own results, nothing else. Run it where the central workers run (their PULSE_BROKER_URL and
    PULSE_LOCATIONS_SECRET); running it again changes nothing."""
    from pulse.locations import RESULTS, dispatch, permissions
    from pulse.rabbitmq import channel

    secret = _secret(name)
    settings = get_settings()
    with channel(settings) as ch:
        dispatch.declare(ch, name, settings.queue_type)
    user = user or f"pulse-{name}"
    p = permissions(name)
    echo(f"# the location's workers: PULSE_BROKER_URL=amqps://{user}:PASSWORD@HOST/VHOST")
    echo(f"PULSE_LOCATION={name}")
    echo(f"PULSE_LOCATION_KEY={_key(secret, name)}")
    echo("# its RabbitMQ user (rabbitmqctl add_user first), on the broker:")
    vhost = settings.vhost
    quoted = [shlex.quote(text) for text in (vhost, user, p["configure"], p["write"], p["read"])]
    echo("rabbitmqctl set_permissions -p {} {} {} {} {}".format(*quoted))
    topic = [shlex.quote(text) for text in (vhost, user, RESULTS, p["topic_write"], p["topic_read"])]
    echo("rabbitmqctl set_topic_permissions -p {} {} {} {} {}".format(*topic))


@locations.command("key")
@click.argument("name")
def key(name: str) -> None:
    """Print location NAME's key, for its workers' PULSE_LOCATION_KEY (derived from
    PULSE_LOCATIONS_SECRET, which must be set here as where the central workers run)."""
    echo(_key(_secret(name), name))


def _secret(name: str) -> str:
    from pulse.config import location_name

    try:
        location_name(name)
    except ValueError as e:
        fail(str(e), 2)
    secret = get_settings().locations_secret
    if not secret:
        fail("PULSE_LOCATIONS_SECRET is not set: the key derives from it (set it as the central workers have it)", 2)
    return secret


def _key(secret: str, name: str) -> str:
    from pulse.locations.wire import key as derive

    return derive(secret, name)


COMMANDS = [locations]
