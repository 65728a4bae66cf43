"""A database of a test's own at an older migration, for the tests of the migrations after it."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

import peewee
import psycopg
from playhouse.migrations import Runner
from psycopg import sql

from pulse.config import Settings
from pulse.db import MIGRATIONS_DIR, setup_database
from tests.conftest import POOL


@contextlib.contextmanager
def database_at(settings: Settings, migration: str, suffix: str) -> Iterator[peewee.Database]:
    """A new database (the tests' name + ``suffix``) migrated up to ``migration`` and bound to
    Pulse's models; the tests' database bound again, and the new one dropped, afterwards."""
    name = settings.database_name + suffix
    admin = psycopg.conninfo.make_conninfo(settings.database_url, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = settings.database_url.rsplit("/", 1)[0] + "/" + name
    database = setup_database(dataclasses.replace(settings, database_url=url), max_connections=2)
    Runner(database, MIGRATIONS_DIR).up(migration)
    try:
        yield database
    finally:
        setup_database(settings, max_connections=POOL)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
