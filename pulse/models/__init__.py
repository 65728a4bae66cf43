"""Peewee models. Each domain owns its module; the schema itself lives in `pulse/migrations/`."""

from pulse.models.base import BaseModel, utcnow
from pulse.models.component import Component
from pulse.models.failed_message import FailedMessage
from pulse.models.heartbeat import Heartbeat
from pulse.models.incident import Incident, IncidentUpdate
from pulse.models.organization import Organization
from pulse.models.uptime import UptimeCheck

__all__ = [
    "BaseModel",
    "Component",
    "FailedMessage",
    "Heartbeat",
    "Incident",
    "IncidentUpdate",
    "Organization",
    "UptimeCheck",
    "utcnow",
]
