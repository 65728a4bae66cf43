"""The gauges each domain contributes, read from PostgreSQL at each scrape: a domain registers a
function that reads its gauges on a connection (`register`); `FromDatabase` collects every one
registered, on one connection. They are the same on every worker (aggregate them with max).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pulse.config import Settings

if TYPE_CHECKING:
    import psycopg
    from prometheus_client import Metric

logger = logging.getLogger(__name__)

#: A domain's gauges: read on a connection (autocommit), as prometheus-client's metric families.
Gauges = Callable[["psycopg.Connection[Any]"], Iterable["Metric"]]

_registered: list[Gauges] = []


def register(gauges: Gauges) -> Gauges:
    """Read ``gauges`` at each scrape, after those registered before (a decorator)."""
    _registered.append(gauges)
    return gauges


class FromDatabase:
    """A collector of the registered gauges; none is reported when PostgreSQL does not answer or
    one of them fails (an unmigrated database, or PostgreSQL down: its own alerts say so)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def collect(self) -> Any:
        import psycopg

        from pulse.db import CONNECT_TIMEOUT

        try:
            with psycopg.connect(self.settings.database_url, connect_timeout=CONNECT_TIMEOUT, autocommit=True) as conn:
                families = [family for gauges in _registered for family in gauges(conn)]
        except psycopg.Error as e:
            logger.warning("Could not read the gauges kept in PostgreSQL: %s", type(e).__name__)
            return
        yield from families
