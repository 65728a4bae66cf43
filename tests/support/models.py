"""A table the test actors write to, so tests can see each attempt."""

from peewee import BigAutoField, CharField, IntegerField

from pulse.models import BaseModel
from pulse.models.base import DateTimeTZField, utcnow


class Attempt(BaseModel):
    id = BigAutoField()
    key = CharField()
    message_id = CharField()
    number = IntegerField()  # 1 for the first attempt at this key
    pid = IntegerField()
    at = DateTimeTZField(default=utcnow)

    class Meta:
        table_name = "test_attempt"

    @classmethod
    def count(cls, key: str) -> int:
        return cls.select().where(cls.key == key).count()
