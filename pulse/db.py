"""The PostgreSQL database: one pooled Peewee database per process, migrations.

Models bind to `db`, a proxy initialised by `setup_database`. Worker processes size the pool to
their thread count (see `pulse.middleware.database`); connections open lazily on a thread's first
query and go back to the pool when the message is done.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import psycopg
from peewee import DatabaseProxy
from playhouse.migrations import Runner
from playhouse.pool import PooledPostgresqlDatabase
from psycopg import conninfo, errors, sql

from pulse.config import Settings, redact

logger = logging.getLogger(__name__)

db = DatabaseProxy()

MIGRATIONS_DIR = os.path.join(os.path.dirname(__file__), "migrations")

# Held while migrating, so two `pulse migrate` at once apply each migration once.
_MIGRATION_LOCK = 0x70756C7365  # "pulse"

CONNECT_TIMEOUT = 5  # seconds, for every new connection
POOL_WAIT = 10  # seconds a thread waits for a free pooled connection
STALE_AFTER = 300  # seconds before an idle pooled connection is replaced


class Pool(PooledPostgresqlDatabase):
    """Peewee's pool, handing out a connection without a round trip to test it first (peewee
    sends ``SELECT 1``, which would cost every message a query). A connection that died while idle
    (PostgreSQL restarted) fails its next query, which is a transient error and retried, and is
    then dropped from the pool."""

    def _is_closed(self, conn: Any) -> bool:
        return bool(conn.closed or conn.broken)


def setup_database(settings: Settings, *, max_connections: int = 4) -> Pool:
    """(Re)bind `db` to a pool of at most ``max_connections`` connections."""
    if db.obj is not None:
        db.obj.close_all()
    database = Pool(
        settings.database_url,
        max_connections=max_connections,
        stale_timeout=STALE_AFTER,
        timeout=POOL_WAIT,
        connect_timeout=CONNECT_TIMEOUT,
        # Statements run in autocommit unless wrapped in db.atomic(); a runaway query is cut off.
        options="-c statement_timeout=60000",
    )
    db.initialize(database)
    return database


def create_database_if_missing(settings: Settings) -> bool:
    """Create the database named by the URL if it does not exist. True when created."""
    name = settings.database_name
    maintenance = conninfo.make_conninfo(settings.database_url, dbname="postgres")
    with psycopg.connect(maintenance, autocommit=True, connect_timeout=CONNECT_TIMEOUT) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            return False
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except (errors.DuplicateDatabase, errors.UniqueViolation):  # a concurrent `pulse migrate` made it
            return False
    logger.info("Created database %s.", name)
    return True


def drop_database(settings: Settings) -> None:
    """Drop the database the URL names, if it exists, closing its connections (the demo's own)."""
    if db.obj is not None:
        db.obj.close_all()
    maintenance = conninfo.make_conninfo(settings.database_url, dbname="postgres")
    with psycopg.connect(maintenance, autocommit=True, connect_timeout=CONNECT_TIMEOUT) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(settings.database_name)))


def migrate(settings: Settings) -> list[str]:
    """Create the database if needed and apply pending migrations. Returns the names applied."""
    create_database_if_missing(settings)
    database = db.obj if db.obj is not None else setup_database(settings)
    with database.connection_context():
        database.execute_sql("SET statement_timeout = 0")  # an index build may take a while
        database.execute_sql("SELECT pg_advisory_lock(%s)", (_MIGRATION_LOCK,))
        try:
            return Runner(database, MIGRATIONS_DIR).up()
        finally:
            database.execute_sql("SELECT pg_advisory_unlock(%s)", (_MIGRATION_LOCK,))
            database.execute_sql("RESET statement_timeout")


def pending_migrations(settings: Settings) -> list[str]:
    """Names of migrations not yet applied (the database must exist)."""
    database = db.obj if db.obj is not None else setup_database(settings)
    with database.connection_context():
        return [m.name for m in Runner(database, MIGRATIONS_DIR).status() if m.applied is None and m.path]


def describe(settings: Settings) -> str:
    """The database URL without its password, for messages."""
    return redact(settings.database_url)
