"""`pulse check`: run one uptime check now and show each condition's result."""

from __future__ import annotations

import sys

import click

from pulse.cli.output import echo, fail, print_json, settings
from pulse.config import get_settings


@click.command("check")
@click.argument("key", required=False)
@click.option("--url", help="Check this URL instead of a configured component.")
@click.option("--condition", "-c", "condition_texts", multiple=True, help="A condition (repeat for more).")
@click.option("--method", default="GET", show_default=True)
@click.option("--header", "-H", "headers", multiple=True, help="Name: value (repeat for more).")
@click.option("--timeout", type=click.FloatRange(0.1, 60), default=10, show_default=True, help="Seconds.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def check_now(
    key: str | None,
    url: str | None,
    condition_texts: tuple[str, ...],
    method: str,
    headers: tuple[str, ...],
    timeout: float,
    as_json: bool,
) -> None:
    """Run one check now and print each condition's result (nothing is recorded).

    KEY names a configured component (ORGANIZATION/KEY when keys repeat); --url with --condition
    tries conditions on any target, without a database. Exit 0 when every condition passes, 1
    when any fails, 2 on a usage or configuration error.
    """
    from pulse import components
    from pulse.models import utcnow
    from pulse.net import AddressPolicy, Request
    from pulse.uptime import conditions, record
    from pulse.uptime.check import DEFAULT_CONDITIONS, run

    if bool(key) == bool(url):
        fail("give a component KEY or --url, not both", code=2)
    current = get_settings()
    try:
        if url:
            extra = dict(_header(h) for h in headers)
            texts = list(condition_texts) or list(DEFAULT_CONDITIONS)
            request = Request(method=method.upper(), url=url, headers=extra, timeout_s=timeout)
            extract: dict[str, str] = {}
        else:
            settings()
            loaded = record.load(components.find(str(key)).id, utcnow())
            if loaded is None:
                raise LookupError(f"component {key!r} was deleted just now")
            request, texts, extract = loaded.request, loaded.conditions, loaded.extract
        for text in texts:
            conditions.parse(text)
    except conditions.ConditionError as e:
        fail(str(e), code=2)
    except LookupError as e:
        fail(str(e.args[0]), code=2)
    outcome = run(request, texts, extract, AddressPolicy.from_settings(current))
    report = {
        "success": outcome.success,
        "status": outcome.response.status,
        "response_time_ms": round(outcome.response.response_time_ms),
        "error": outcome.error,
        "observed": outcome.seen,
        "conditions": [r.as_dict() for r in outcome.results],
        "extracted": outcome.extracted,
    }
    if as_json:
        print_json(report)
    else:
        if outcome.error:
            echo(f"error: {outcome.error}")
        for r in outcome.results:
            echo(f"{'PASS' if r.success else 'FAIL'}  {r.resolved}")
        echo(f"{outcome.seen} in {report['response_time_ms']} ms")
    sys.exit(0 if outcome.success else 1)


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        fail(f"--header {text!r}: expected 'Name: value'", code=2)
    return name.strip(), value.strip()


COMMANDS = [check_now]
