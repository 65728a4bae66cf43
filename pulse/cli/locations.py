"""`pulse locations key NAME`: the key a location's workers open their batches of checks with."""

from __future__ import annotations

import click

from pulse.cli.output import echo, fail
from pulse.config import get_settings


@click.group()
def locations() -> None:
    """Locations that check components from elsewhere (docs/locations.md)."""


@locations.command("key")
@click.argument("name")
def key(name: str) -> None:
    """Print location NAME's key, for its workers' PULSE_LOCATION_KEY (derived from
    PULSE_LOCATIONS_SECRET, which must be set here as where the central workers run)."""
    from pulse.locations import name as location_name
    from pulse.locations.wire import key as derive

    try:
        location_name(name)
    except ValueError as e:
        fail(str(e), 2)
    secret = get_settings().locations_secret
    if not secret:
        fail("PULSE_LOCATIONS_SECRET is not set: the key derives from it (set it as the central workers have it)", 2)
    echo(derive(secret, name))


COMMANDS = [locations]
