"""`pulse tokens create|list|revoke`: the API's tokens (docs/api.md)."""

from __future__ import annotations

from typing import Any

import click

from pulse.cli.output import echo, fail, print_json, print_table, settings

SCOPE_HELP = "read, write, incidents or oncall (repeat for more)."


@click.group()
def tokens() -> None:
    """The API's tokens: made, listed, revoked (docs/api.md)."""


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    from pulse.spec import parse_duration

    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


@tokens.command("create")
@click.option("--org", "slug", required=True, metavar="SLUG", help="The organization the token reaches.")
@click.option("--scope", "scopes", required=True, multiple=True, metavar="SCOPE", help=SCOPE_HELP)
@click.option("--expires", callback=_duration, metavar="DURATION", help="Expire after e.g. 90d (default: never).")
@click.option("--name", default="", help="What the token is for, shown by `pulse tokens list`.")
def create(slug: str, scopes: tuple[str, ...], expires: Any, name: str) -> None:
    """Make a token of organization SLUG and print it, once: only its digest is kept."""
    from pulse.api import tokens as api_tokens

    settings()
    try:
        row, token = api_tokens.create(slug, list(scopes), name=name, expires=expires)
    except (ValueError, LookupError) as e:
        fail(str(e), 2)
    echo(f"# token {row.id} of {slug} ({', '.join(row.scopes)}), shown once: keep it now")
    click.echo(token)


@tokens.command("list")
@click.option("--org", "slug", default=None, metavar="SLUG", help="Only this organization's tokens.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_tokens(slug: str | None, as_json: bool) -> None:
    """List the tokens (never the token itself): scopes, when made, when it expires, its last use,
    whether it was revoked."""
    from pulse.api import tokens as api_tokens

    settings()
    try:
        rows = api_tokens.listed(slug)
    except LookupError as e:
        fail(str(e), 2)
    if as_json:
        print_json(rows)
        return
    columns = ["id", "organization", "name", "scopes", "created", "expires", "last used", "revoked"]
    print_table(
        columns,
        [
            [
                r["id"],
                r["organization"],
                r["name"] or None,
                ",".join(r["scopes"]),
                _short(r["created_at"]),
                _short(r["expires_at"]),
                _short(r["last_used_at"]),
                _short(r["revoked_at"]),
            ]
            for r in rows
        ],
    )


@tokens.command("revoke")
@click.argument("token_id", metavar="ID", type=click.IntRange(1))
def revoke(token_id: int) -> None:
    """Revoke token ID (see `pulse tokens list`): its requests are refused from now on."""
    from pulse.api import tokens as api_tokens

    settings()
    try:
        changed = api_tokens.revoke(token_id)
    except LookupError as e:
        fail(str(e), 2)
    echo(f"revoked token {token_id}" if changed else f"token {token_id} was revoked already")


def _short(iso: str | None) -> str | None:
    return None if iso is None else iso[:16].replace("T", " ")


COMMANDS = [tokens]
