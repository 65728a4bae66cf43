"""`pulse serve`'s service on loopback, in a thread, on free ports."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from pulse.config import Settings
from pulse.inbound.server import Service
from tests.support.wait import wait_for


@contextlib.contextmanager
def running(settings: Settings, **options: Any) -> Iterator[Service]:
    """The service serving until the block ends; ``options`` override `Service`'s defaults."""
    options = {"metrics_port": 0, "request_deadline_s": 10.0, "max_connections": 64, **options}
    service = Service(settings, "127.0.0.1", 0, **options)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    wait_for(lambda: service.server.started, "the service to start")
    try:
        yield service
    finally:
        service.stop()
        thread.join(15)
