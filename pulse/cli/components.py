"""`pulse components release`: give a component the configuration file made to the API (docs/api.md)."""

from __future__ import annotations

import click

from pulse.cli.output import echo, fail, settings


@click.group()
def components() -> None:
    """Components: who writes them (docs/api.md)."""


@components.command("release")
@click.argument("slug", metavar="ORG")
@click.argument("key")
def release(slug: str, key: str) -> None:
    """Release component KEY of organization ORG from the configuration file: the API may change and
    delete it, and `pulse apply` leaves it alone until a file names it again."""
    from pulse.api import component_writes

    settings()
    try:
        changed = component_writes.release(slug, key)
    except LookupError as e:
        fail(str(e), 2)
    echo(f"released {slug}/{key}: the API writes it now" if changed else f"{slug}/{key} is the API's already")


COMMANDS = [components]
