"""`pulse components release`, `pulse channels release`, `pulse subscribers release`, `pulse
integrations release`, `pulse calculated-metrics release`, `pulse people release`, `pulse schedules
release`, `pulse escalation-policies release`, `pulse alert-sources release` (and `pulse metrics
release`, in `pulse metrics`' group): give an object the configuration file made to the API
(docs/api.md)."""

from __future__ import annotations

import click

from pulse.cli.output import echo, fail, settings


def _group(plural: str, name: str, identifier: str) -> click.Group:
    """The command group ``plural`` with its `release` command."""

    @click.group(plural, help=f"{plural.capitalize()}: who writes them (docs/api.md).")
    def group() -> None:
        pass

    group.add_command(release(plural, name, identifier))
    return group


def release(plural: str, name: str, identifier: str) -> click.Command:
    """The ``release`` command of `pulse.api.routes.RESOURCES`' resource ``plural``."""

    @click.command(
        "release",
        help=f"Release {name} {identifier} of organization ORG from the configuration file: the API may change "
        "and delete it, and `pulse apply` leaves it alone until a file names it again.",
    )
    @click.argument("slug", metavar="ORG")
    @click.argument("text", metavar=identifier)
    def command(slug: str, text: str) -> None:
        from pulse.api.routes import RESOURCES

        settings()
        try:
            changed = RESOURCES[plural].release(slug, text)
        except LookupError as e:
            fail(str(e), 2)
        echo(f"released {slug}/{text}: the API writes it now" if changed else f"{slug}/{text} is the API's already")

    return command


COMMANDS = [
    _group("components", "component", "KEY"),
    _group("channels", "channel", "KEY"),
    _group("subscribers", "subscriber", "ID"),
    _group("integrations", "integration", "KEY"),
    _group("calculated-metrics", "calculated metric", "KEY"),
    _group("people", "person", "KEY"),
    _group("schedules", "schedule", "KEY"),
    _group("escalation-policies", "escalation policy", "KEY"),
    _group("alert-sources", "alert source", "KEY"),
]
