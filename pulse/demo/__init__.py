"""`pulse demo`: Pulse against a bundled target whose API flaps, told as it happens.

The demo starts a local HTTP server (`server`: the target and a webhook receiver), applies
`demo.yaml` against it, and runs the real workers and scheduler (`pulse run`). While they run it
prints each check, status change and incident from the database, and each webhook the receiver
gets, with its signature checked (`feed`). Ctrl-C stops everything.

It works in a database and a RabbitMQ vhost of its own, beside the configured ones (`own`),
emptied each time it starts: nothing of the demo is left in the user's own, and a later
`pulse run` never checks the demo's vanished target nor retries its sends.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import threading
from importlib.resources import files
from urllib.parse import quote, urlsplit

import requests

from pulse import configfile, processes, rabbitmq
from pulse.config import Settings, redact
from pulse.db import drop_database, setup_database
from pulse.db import migrate as run_migrations
from pulse.demo.feed import Feed, console, escape
from pulse.demo.server import CYCLE, DOWN_AT, DOWN_FOR, SLOW_S, DemoServer
from pulse.errors import ConfigError
from pulse.rabbitmq import admin


def own(settings: Settings) -> Settings:
    """The demo's database and vhost, beside the configured ones: ``<database>_demo`` and
    ``<vhost>_demo`` (``pulse_demo`` for the default vhost ``/``)."""
    database = urlsplit(settings.database_url)
    vhost = "pulse_demo" if settings.vhost == "/" else f"{settings.vhost}_demo"
    return dataclasses.replace(
        settings,
        database_url=database._replace(path="/" + quote(f"{settings.database_name}_demo")).geturl(),
        broker_url=",".join(
            urlsplit(url)._replace(path="/" + quote(vhost, safe="")).geturl() for url in settings.broker_urls
        ),
    )


def run_demo(settings: Settings, threads: int) -> int:
    with rabbitmq.channel(settings, attempts=1):
        pass  # RabbitMQ answers (or the command says so in one line), before anything is made
    settings = own(settings)
    try:
        admin.recreate_vhost(settings)
    except requests.RequestException as e:
        raise ConfigError(
            f"RabbitMQ's management API does not answer at {redact(settings.rabbitmq_api_url)} "
            f"({type(e).__name__}): enable it with `rabbitmq-plugins enable rabbitmq_management`"
        ) from None
    drop_database(settings)
    setup_database(settings)
    server = DemoServer(secrets.token_urlsafe(16))
    threading.Thread(target=server.serve_forever, name="demo-target", daemon=True).start()
    try:
        for name in run_migrations(settings):
            console.print(f"applied {name}")
        os.environ.update(
            PULSE_DEMO_TARGET=server.url,
            PULSE_DEMO_SECRET=server.secret,
            PULSE_DATABASE_URL=settings.database_url,
            PULSE_BROKER_URL=settings.broker_url,
        )
        text = files("pulse.demo").joinpath("demo.yaml").read_text(encoding="utf-8")
        configfile.apply(configfile.load(text))
        feed = Feed()
        # The workers' JSON logs would drown the story: warnings only, unless asked for.
        level = os.environ.get("PULSE_LOG_LEVEL", "WARNING")
        env = {**os.environ, "PULSE_LOG_LEVEL": level}
        console.print(
            f"[bold]Pulse demo[/]: target and webhook receiver on {server.url}\n"
            f"  website  {server.url}/            always up\n"
            f"  api      {server.url}/api/health  down {DOWN_FOR:.0f} s of every {CYCLE:.0f} s,"
            f" from {DOWN_AT:.0f} s after the start\n"
            f"  search   {server.url}/search      answers in {SLOW_S} s, over its 500 ms condition\n"
            f"Checks every 15 s; the configuration is pulse/demo/demo.yaml. Workers log at {level} and above.\n"
            f"The demo's own database {escape(settings.database_name)} and vhost {escape(settings.vhost)}"
            " are emptied at each start;"
            " yours are not touched.\n"
            "[bold]Ctrl-C[/] stops everything.\n"
        )
        code = processes.supervise(1, threads, env=env, watch=feed)
    except KeyboardInterrupt:  # Ctrl-C before the workers started
        code = 130
    finally:
        server.shutdown()
        server.server_close()
    console.print("demo stopped")
    return code
