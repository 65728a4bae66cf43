"""Peewee models. Each domain owns its module; the schema itself lives in `pulse/migrations/`."""

from pulse.models.alert import OnCallAlert, OnCallReplyCode, OnCallReplyMiss, OnCallTimeline
from pulse.models.alert_source import AlertEvent, AlertSource
from pulse.models.api_token import ApiToken
from pulse.models.api_writes import ApiAudit, ApiIdempotency
from pulse.models.base import BaseModel, utcnow
from pulse.models.calculated import CalculatedMetric, CalculatedMetricDataPoint, CalculatedMetricVariable
from pulse.models.cleanup import CleanupRun
from pulse.models.component import Component, MaintenanceWindow
from pulse.models.event import Event
from pulse.models.extracted import ExtractedValue, ExtractedValueDataPoint
from pulse.models.failed_message import FailedMessage
from pulse.models.heartbeat import Heartbeat
from pulse.models.heartbeat_monitor import HeartbeatMonitor, HeartbeatPing
from pulse.models.incident import Incident, IncidentUpdate
from pulse.models.metrics import Integration, MetricDataPoint, MetricsQuery
from pulse.models.notification import Notification, NotificationChannel, Subscriber
from pulse.models.oncall import EscalationPolicy, OnCallSchedule, Person
from pulse.models.organization import Organization
from pulse.models.rollup import CalculatedRollup, ComponentRollup, ExtractedRollup, MetricRollup, RollupState
from pulse.models.uptime import UptimeCheck

__all__ = [
    "AlertEvent",
    "AlertSource",
    "ApiAudit",
    "ApiIdempotency",
    "ApiToken",
    "BaseModel",
    "CalculatedMetric",
    "CalculatedMetricDataPoint",
    "CalculatedMetricVariable",
    "CalculatedRollup",
    "CleanupRun",
    "Component",
    "ComponentRollup",
    "EscalationPolicy",
    "Event",
    "ExtractedRollup",
    "ExtractedValue",
    "ExtractedValueDataPoint",
    "FailedMessage",
    "Heartbeat",
    "HeartbeatMonitor",
    "HeartbeatPing",
    "Incident",
    "IncidentUpdate",
    "Integration",
    "MaintenanceWindow",
    "MetricDataPoint",
    "MetricRollup",
    "MetricsQuery",
    "Notification",
    "NotificationChannel",
    "OnCallAlert",
    "OnCallReplyCode",
    "OnCallReplyMiss",
    "OnCallSchedule",
    "OnCallTimeline",
    "Organization",
    "Person",
    "RollupState",
    "Subscriber",
    "UptimeCheck",
    "utcnow",
]
