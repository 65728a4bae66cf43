"""`pulse serve`'s service on loopback, on free ports: in a thread of the test (`running`), or as a
process of its own (`ServeProcess`)."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

import requests

from pulse.app import serve as app
from pulse.config import Settings
from pulse.inbound.server import Service
from tests.support.wait import wait_for
from tests.support.worker import WorkerProcess, free_port


@contextlib.contextmanager
def running(settings: Settings, **options: Any) -> Iterator[Service]:
    """The service serving until the block ends: every domain's routes (`pulse.app.serve.routes`) unless
    ``served`` says which; ``options`` override `Service`'s defaults."""
    options = {"metrics_port": 0, "request_deadline_s": 10.0, "max_connections": 64, "max_per_address": 32, **options}
    if "served" not in options:
        options["served"] = app.routes(settings)
    service = Service("127.0.0.1", 0, **options)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    wait_for(lambda: service.server.started, "the service to start")
    try:
        yield service
    finally:
        service.stop()
        thread.join(15)


def call(service: Service, method: str, path: str, bearer: str, body: Any = None, **headers: str) -> requests.Response:
    """``method path`` of the API (``path`` under ``/api/v1``) on ``service``, with ``bearer``'s token and
    ``body`` as JSON."""
    headers = {"Authorization": f"Bearer {bearer}", **headers}
    url = f"http://127.0.0.1:{service.port}/api/v1{path}"
    return requests.request(method, url, json=body, headers=headers, timeout=10)


class ServeProcess(WorkerProcess):
    """``pulse serve`` in a process of its own, as it is run, on free ports, its output (the log's
    JSON lines) kept; ready once it said where it serves."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.port, metrics_port = free_port(), free_port()
        command = [sys.executable, "-m", "pulse.cli", "serve", "--port", str(self.port)]
        self._start(
            command, {"PULSE_SERVE_METRICS_PORT": str(metrics_port), **(env or {})}, ready="serving on", expected=1
        )

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"
