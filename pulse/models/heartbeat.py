from peewee import CharField

from pulse.models.base import BaseModel, DateTimeTZField, utcnow

SCHEDULER = "scheduler"  # the beat of the periodic tick in schedules/heartbeat.py


class Heartbeat(BaseModel):
    """The last time a periodic tick went through scheduler, broker and worker (see `pulse health`)."""

    name = CharField(max_length=64, primary_key=True)
    beat_at = DateTimeTZField(default=utcnow)

    @classmethod
    def beat(cls, name: str) -> None:
        now = utcnow()
        cls.insert(name=name, beat_at=now).on_conflict(conflict_target=[cls.name], update={cls.beat_at: now}).execute()
