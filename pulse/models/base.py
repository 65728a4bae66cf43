"""The base model every Pulse table derives from."""

from __future__ import annotations

from datetime import UTC, datetime

from peewee import Model
from playhouse.postgres_ext import DateTimeTZField

from pulse.db import db

__all__ = ["BaseModel", "DateTimeTZField", "utcnow"]


def utcnow() -> datetime:
    return datetime.now(UTC)


class BaseModel(Model):
    class Meta:
        database = db
        legacy_table_names = False
