"""`pulse`: the operator's command line, one module per command group.

A command's module is imported when the command runs (or ``--help`` lists them all), so a command
loads only what it needs: `pulse status` neither dramatiq nor pika."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from pulse.cli.output import echo, fail, first_line
from pulse.config import get_settings, redact, renamed_in_use
from pulse.errors import ConfigError

# Each command: the module of pulse.cli that defines it (in its COMMANDS).
COMMANDS = {
    "alert-sources": "owners",
    "apply": "apply",
    "calculated": "calculated",
    "calculated-metrics": "owners",
    "channels": "owners",
    "check": "check",
    "cleanup": "cleanup",
    "components": "owners",
    "demo": "run",
    "dlq": "dlq",
    "escalation-policies": "owners",
    "formula": "formula",
    "health": "ops",
    "integrations": "owners",
    "locations": "locations",
    "metrics": "metrics",
    "migrate": "ops",
    "notifications": "notifications",
    "notify": "notifications",
    "oncall": "oncall",
    "people": "owners",
    "queues": "ops",
    "run": "run",
    "schedules": "owners",
    "serve": "serve",
    "status": "status",
    "subscribers": "owners",
    "tokens": "tokens",
}


def loaded(*names: str) -> tuple[type[BaseException], ...]:
    """The exception classes named (``module.Class``) whose module is imported: one whose module is
    not cannot have been raised, and importing it to find out would cost every command its import."""
    found = []
    for name in names:
        module, _, attribute = name.rpartition(".")
        if module in sys.modules:
            found.append(getattr(sys.modules[module], attribute))
    return tuple(found)


class PulseGroup(click.Group):
    """Imports a command's module when it is asked for, and turns the failures an operator can meet
    into one line and an exit code, not a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module = importlib.import_module(f"pulse.cli.{COMMANDS[cmd_name]}")
        return next(command for command in module.COMMANDS if command.name == cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        for warning in renamed_in_use():
            echo(f"pulse: warning: {warning}", err=True)
        try:
            return super().invoke(ctx)
        except ConfigError as e:
            fail(str(e), code=2)
        except loaded("peewee.OperationalError", "peewee.InterfaceError", "psycopg.OperationalError") as e:
            fail(f"database unavailable at {redact(get_settings().database_url)}: {first_line(e)}")
        except loaded("pika.exceptions.AMQPError", "dramatiq.errors.BrokerConnectionError") as e:
            fail(
                f"RabbitMQ unavailable at {redact(get_settings().broker_url)} ({first_line(e) or type(e).__name__}): "
                "is it running? (rabbitmq-server -detached, or systemctl start rabbitmq-server)"
            )


@click.group(cls=PulseGroup)
@click.version_option(package_name="pulse-workers")
def main() -> None:
    """Operate Pulse: database, queues, dead letters, health."""
