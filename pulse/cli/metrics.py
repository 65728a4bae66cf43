"""`pulse metrics [ORG]` and `pulse metrics query`: each query's latest poll; one query now; `pulse
metrics release`: give a metric the configuration file made to the API (`pulse.cli.owners`)."""

from __future__ import annotations

import sys

import click

from pulse.cli import owners
from pulse.cli.output import echo, fail, print_json, print_table, settings


class _ListOrCommand(click.Group):
    """``pulse metrics [ORG]`` lists; ``pulse metrics query ...`` runs the subcommand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            ctx.meta["organization"] = args.pop(0)
        return super().parse_args(ctx, args)


@click.group(cls=_ListOrCommand, invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def metrics(ctx: click.Context, as_json: bool) -> None:
    """Each metrics query (of ORG, a slug, if given): its last value and when, its state
    (ok, warning, critical, no data), its integration and its last error."""
    if ctx.invoked_subcommand is not None:
        return
    from pulse.metrics.queries import overview

    settings()
    try:
        rows = overview(ctx.meta.get("organization"))
    except LookupError as e:
        fail(str(e.args[0]), code=2)
    if as_json:
        print_json(rows)
        return
    print_table(
        ["metric", "name", "state", "value", "polled", "integration", "error"],
        [
            [
                f"{r['organization']}/{r['key']}",
                r["name"],
                r["state"].replace("_", " ") + (" (paused)" if r["paused"] else ""),
                None if r["last_value"] is None else f"{r['last_value']:g}{r['unit']}",
                r["last_polled_at"] and r["last_polled_at"][:19],
                r["integration"],
                (r["last_error"] or "")[:80],
            ]
            for r in rows
        ],
    )


@metrics.command("query")
@click.argument("integration")
@click.argument("text", metavar="QUERY")
@click.option("--aggregate", help="How to make one value of several series (first, sum, avg, min, max).")
@click.option("--field", help="New Relic: the column of the rows that holds the value.")
@click.option("--timeout", type=click.FloatRange(0.1, 60), default=10, show_default=True, help="Seconds.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def query_now(
    integration: str, text: str, aggregate: str | None, field: str | None, timeout: float, as_json: bool
) -> None:
    """Run QUERY now through INTEGRATION (KEY or ORGANIZATION/KEY) and print its value (nothing is
    recorded). Exit 0 with a value, 1 when there is none or the vendor is unavailable, 2 on a usage
    or configuration error (a bad query, bad credentials)."""
    from pulse.metrics.integrations import INTEGRATIONS
    from pulse.metrics.queries import find_integration
    from pulse.net import AddressPolicy
    from pulse.net.api import ApiError

    current = settings()
    try:
        found = find_integration(integration)
    except LookupError as e:
        fail(str(e.args[0]), code=2)
    options = {name: value for name, value in (("aggregate", aggregate), ("field", field)) if value is not None}
    kind = INTEGRATIONS[found.type]
    for name in set(options) - set(kind.options):
        fail(f"a {found.type} integration does not take --{name}", code=2)
    try:
        sample = kind.query(found.settings, text, options, AddressPolicy.from_settings(current), timeout)
    except ApiError as e:
        fail(str(e), code=2 if e.permanent else 1)
    if as_json:
        print_json({"value": sample.value, "note": sample.note})
    elif sample.value is None:
        echo(f"no data: {sample.note}")
    else:
        echo(f"{sample.value:g}" + (f"  ({sample.note})" if sample.note else ""))
    sys.exit(0 if sample.value is not None else 1)


metrics.add_command(owners.release("metrics", "metric", "KEY"))

COMMANDS = [metrics]
