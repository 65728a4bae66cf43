"""`pulse apply -f FILE`: organizations, components, channels and subscribers from a file."""

from __future__ import annotations

import sys
from typing import Any

import click
import peewee

from pulse.cli.output import echo, fail, first_line, settings
from pulse.errors import ConfigError


@click.command("apply")
@click.option("-f", "--file", "path", type=click.File("rb"), required=True, help="YAML file (UTF-8).")
@click.option("--prune", is_flag=True, help="Also delete what the file does not name.")
def apply_file(path: Any, prune: bool) -> None:
    """Declare organizations, components, channels and subscribers from a file: all of it, or nothing."""
    from pulse import configfile
    from pulse.cli.progress import shown

    try:
        with shown(f"reading {path.name}"):
            config = configfile.load(path.read(configfile.MAX_FILE_BYTES + 1))  # enough to know it is too large
    except ConfigError as e:
        echo(f"pulse: {path.name} is not valid, nothing was changed:", err=True)
        for line in str(e).splitlines():
            echo(f"  {line}", err=True)
        sys.exit(2)
    settings()
    try:
        with shown("applying", configfile.steps(config)) as advance:
            report = configfile.apply(config, prune=prune, advance=advance)
    except (peewee.DataError, peewee.IntegrityError) as e:  # the database refused a value: never echo it
        fail(f"{path.name} could not be applied, nothing was changed: {first_line(e)}", code=2)
    for name in report.subscribers_gone:
        echo(
            f"pulse: warning: subscriber {name} is gone (its push service said so): nothing is sent to it; "
            "remove it from the file",
            err=True,
        )
    echo(summary(report, prune))


def summary(report: Any, prune: bool) -> str:
    """What an apply wrote: what the file declares always, the rest when it declares some (and
    with ``prune``, everything deleted)."""
    some = [
        (report.heartbeats, "heartbeat monitor(s)"),
        (report.people, "person" if report.people == 1 else "people"),
        (report.schedules, "schedule(s)"),
        (report.escalation_policies, _policies(report.escalation_policies)),
        (report.integrations, "integration(s)"),
        (report.metrics, "metric(s)"),
        (report.calculated_metrics, "calculated metric(s)"),
        (report.alert_sources, "alert source(s)"),
    ]
    text = (
        f"applied {report.organizations} organization(s): {report.components_created} component(s) created, "
        f"{report.components_updated} updated, {report.channels} channel(s), {report.subscribers} subscriber(s)"
    )
    text += "".join(f", {count} {what}" for count, what in some if count)
    if prune:
        pruned = [
            (report.organizations_deleted, "organization(s)"),
            (report.components_deleted, "component(s)"),
            (report.channels_deleted, "channel(s)"),
            (report.subscribers_deleted, "subscriber(s)"),
            (report.people_deleted, "person" if report.people_deleted == 1 else "people"),
            (report.schedules_deleted, "schedule(s)"),
            (report.escalation_policies_deleted, _policies(report.escalation_policies_deleted)),
            (report.integrations_deleted, "integration(s)"),
            (report.metrics_deleted, "metric(s)"),
            (report.calculated_metrics_deleted, "calculated metric(s)"),
            (report.alert_sources_deleted, "alert source(s)"),
        ]
        text += "; pruned " + ", ".join(f"{count} {what}" for count, what in pruned)
    return text


def _policies(count: int) -> str:
    return "escalation policy" if count == 1 else "escalation policies"


COMMANDS = [apply_file]
