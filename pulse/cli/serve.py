"""`pulse serve`: the inbound HTTP service (`pulse.inbound`, with every domain's routes: `pulse.app`)
until SIGTERM or Ctrl-C."""

from __future__ import annotations

import signal

import click

from pulse.cli.output import echo, settings


@click.command()
@click.option("--host", metavar="ADDRESS", help="Address to listen on (default: PULSE_SERVE_HOST, 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), help="Port to listen on (default: PULSE_SERVE_PORT, 8080).")
def serve(host: str | None, port: int | None) -> None:
    """Serve what comes in over HTTP (the acknowledgement links of pages, and the routes the domains
    add) until SIGTERM or Ctrl-C, which let the requests in flight finish. Its telemetry is on
    PULSE_SERVE_METRICS_HOST (127.0.0.1) and PULSE_SERVE_METRICS_PORT (/metrics)."""
    run(host, port)


def run(host: str | None, port: int | None) -> None:
    """Run the service (`pulse serve`, and `pulse oncall ack-server`, its former name)."""
    from pulse import logging as pulse_logging
    from pulse.app import serve as app

    current = settings()
    pulse_logging.configure(current.log_level)
    service = app.service(current, host, port)
    address = service.sockets[0].getsockname()[0]
    for stop in (signal.SIGTERM, signal.SIGINT):
        # uvicorn stops gracefully on them, then raises them again under the handler it found:
        # this one lets the process exit 0 instead of dying of its signal.
        signal.signal(stop, lambda number, frame: None)
    telemetry = f"http://{current.serve_metrics_host}:{service.metrics_port}/metrics"
    echo(f"serving on http://{address}:{service.port} (telemetry on {telemetry}; Ctrl-C stops)")
    service.run()


COMMANDS = [serve]
