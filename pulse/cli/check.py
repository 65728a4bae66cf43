"""`pulse check`: run one uptime check now, of any kind, and show each condition's result.

A target given on the command line is named by its kind's flag (`pulse.uptime.kinds`: ``--url``
for http, ``--tcp`` for tcp, ``--dns`` for dns, ``--icmp`` for icmp, ``--cert`` for tls, since ``--tls``
is tcp's TLS on connect) and built by its kind from the options; a configured component is checked
by its own kind.
"""

from __future__ import annotations

import sys

import click

from pulse.cli.output import echo, fail, print_json, settings
from pulse.config import get_settings


@click.command("check")
@click.argument("key", required=False)
@click.option("--url", help="Check this URL instead of a configured component.")
@click.option("--tcp", help="Connect to this HOST:PORT ([IPv6]:PORT) instead of a configured component.")
@click.option("--icmp", help="Ping this HOST instead of a configured component.")
@click.option("--send", help="With --tcp: send this text once connected, and read the reply.")
@click.option("--tls", is_flag=True, help="With --tcp: TLS on connect, the certificate verified.")
@click.option("--dns", help="Ask a resolver about this domain name instead of a configured component.")
@click.option("--type", "record_type", default="A", show_default=True, help="With --dns: the record type asked for.")
@click.option("--resolver", help="With --dns: the resolver's IP[:PORT] ([IPv6]:PORT); the system's by default.")
@click.option("--cert", help="Read and verify the certificate of HOST[:PORT] (a tls check).")
@click.option("--starttls", type=click.Choice(["smtp", "imap", "postgres"]), help="With --cert: STARTTLS first.")
@click.option(
    "--ca-file", help="With an https --url, --tcp and --tls, or --cert: trust this PEM file's CAs, not the system's."
)
@click.option("--condition", "-c", "condition_texts", multiple=True, help="A condition (repeat for more).")
@click.option("--method", default="GET", show_default=True)
@click.option("--header", "-H", "headers", multiple=True, help="Name: value (repeat for more).")
@click.option("--timeout", type=click.FloatRange(0.1, 60), default=10, show_default=True, help="Seconds.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def check_now(
    key: str | None,
    url: str | None,
    tcp: str | None,
    icmp: str | None,
    send: str | None,
    tls: bool,
    dns: str | None,
    record_type: str,
    resolver: str | None,
    cert: str | None,
    starttls: str | None,
    ca_file: str | None,
    condition_texts: tuple[str, ...],
    method: str,
    headers: tuple[str, ...],
    timeout: float,
    as_json: bool,
) -> None:
    """Run one check now and print each condition's result (nothing is recorded).

    KEY names a configured component (ORGANIZATION/KEY when keys repeat); --url (or --tcp) with
    --condition tries conditions on any target, without a database. Exit 0 when every condition passes, 1
    when any fails, 2 on a usage or configuration error.
    """
    from pulse import components
    from pulse.models import utcnow
    from pulse.net import AddressPolicy
    from pulse.uptime import conditions, record
    from pulse.uptime.kinds import KINDS, ca

    named = {"url": url, "tcp": tcp, "dns": dns, "icmp": icmp, "cert": cert}
    given = [kind for kind in KINDS.values() if named.get(kind.flag)]
    if bool(key) + len(given) != 1:
        flags = " or ".join(f"--{kind.flag}" for kind in KINDS.values())
        fail(f"give a component KEY or a target ({flags}), just one", code=2)
    if ca_file is not None and not (given and issubclass(given[0].fields, ca.Fields)):
        fail("--ca-file goes with --url, --tcp or --cert (a component trusts its own ca or ca_file)", code=2)
    current = get_settings()
    try:
        if given:
            (kind,) = given
            options = {"timeout_s": timeout, "method": method, "headers": [_header(h) for h in headers]}
            more = {"send": send, "tls": tls, "record": record_type, "resolver": resolver, "starttls": starttls}
            more["ca"] = None if ca_file is None else ca.load(ca_file, "--ca-file")
            target = kind.command_line(str(named[kind.flag]), options | more)
            texts = list(condition_texts) or list(kind.default_conditions)
            extract: dict[str, str] = {}
        else:
            settings()
            loaded = record.load(components.find(str(key)).id, utcnow())
            if loaded is None:
                raise LookupError(f"component {key!r} was deleted just now")
            kind, target, texts, extract = KINDS[loaded.kind], loaded.target, loaded.conditions, loaded.extract
        for text in texts:
            unknown = sorted(conditions.parse(text).placeholders - kind.placeholders)
            if unknown:
                raise ValueError(f"{text}: {', '.join(unknown)} is not a placeholder of {kind.name} checks")
    except conditions.ConditionError as e:
        fail(str(e), code=2)
    except LookupError as e:
        fail(str(e.args[0]), code=2)
    except ValueError as e:
        fail(str(e), code=2)
    outcome = kind.run(target, texts, extract, AddressPolicy.from_settings(current))
    report = {
        "kind": kind.name,
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
