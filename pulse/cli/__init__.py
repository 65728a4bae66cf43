"""`pulse`: the operator's command line, one module per command group."""

from __future__ import annotations

from typing import Any

import click
import dramatiq.errors
import peewee
import pika.exceptions
import psycopg

from pulse.cli import (
    apply,
    calculated,
    check,
    cleanup,
    dlq,
    formula,
    locations,
    metrics,
    notifications,
    oncall,
    ops,
    run,
    serve,
    status,
)
from pulse.cli.output import echo, fail, first_line
from pulse.config import get_settings, redact, renamed_in_use
from pulse.errors import ConfigError


class PulseGroup(click.Group):
    """Turns the failures an operator can meet into one line and an exit code, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        for warning in renamed_in_use():
            echo(f"pulse: warning: {warning}", err=True)
        try:
            return super().invoke(ctx)
        except ConfigError as e:
            fail(str(e), code=2)
        except (peewee.OperationalError, peewee.InterfaceError, psycopg.OperationalError) as e:
            fail(f"database unavailable at {redact(get_settings().database_url)}: {first_line(e)}")
        except (pika.exceptions.AMQPError, dramatiq.errors.BrokerConnectionError) as e:
            fail(
                f"RabbitMQ unavailable at {redact(get_settings().broker_url)} ({first_line(e) or type(e).__name__}): "
                "is it running? (rabbitmq-server -detached, or systemctl start rabbitmq-server)"
            )


@click.group(cls=PulseGroup)
@click.version_option(package_name="pulse-workers")
def main() -> None:
    """Operate Pulse: database, queues, dead letters, health."""


MODULES = (
    ops,
    run,
    serve,
    apply,
    status,
    check,
    metrics,
    calculated,
    formula,
    notifications,
    oncall,
    dlq,
    cleanup,
    locations,
)
for module in MODULES:
    for command in module.COMMANDS:
        main.add_command(command)
