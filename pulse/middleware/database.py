"""A database connection per message, from the process's pool, always returned."""

from __future__ import annotations

from typing import Any

import dramatiq

from pulse.config import Settings
from pulse.db import db, setup_database
from pulse.recurring import loop


class Database(dramatiq.Middleware):
    """Sizes the pool at boot to the worker's threads, a connection for each loop the process may
    run (`pulse.middleware.loops`) and one for its beat (`pulse.middleware.beat`), and returns
    each thread's connection when its message is done, whatever the outcome. A message that never
    queries takes no connection.

    Parameters:
      settings(Settings): where the database is.
    """

    def __init__(self, *, settings: Settings) -> None:
        self.settings = settings

    def before_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        setup_database(self.settings, max_connections=worker.worker_threads + len(loop.LOOPS) + 1)

    def after_process_message(
        self, broker: dramatiq.Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        if not db.is_closed():
            db.close()

    def after_skip_message(self, broker: dramatiq.Broker, message: Any) -> None:
        if not db.is_closed():
            db.close()

    def before_worker_thread_shutdown(self, broker: dramatiq.Broker, thread: Any) -> None:
        if not db.is_closed():
            db.close()
